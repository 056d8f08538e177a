import { deadlineOf } from "../../src/contract/control";
import { compact } from "../../src/core/compact";
import { traceparentOf } from "../../src/trace/traceparent";
import type { RunRow } from "../store/runs";
import type { RunOrigin } from "../../src/agent/host";
import type { ChildInit } from "../../src/contract/child-init";
import { type ContentBlock, toBlocks } from "../../src/contract/content";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { newRunId } from "../../src/contract/ids";
import type { RunStart, StartRequest } from "../../src/contract/run";
import { childDepth, deploymentDepthCap } from "../../src/core/depth";
import type { Descriptor } from "../../src/core/descriptor";
import type { Placement } from "../../src/core/placement";
import type { ProviderRecord } from "../../src/providers/catalog";
import { childBudget, childInit } from "../delegation/child-spec";
import type { SessionContext } from "../session/session-context";

/**
 * What the out-of-process transports (another deployment, an ACP agent, an A2A agent) share: a start mints its
 * own parent-scoped child id (`<kind>:<runId>`, never the far side's id), is checked against depth
 * and the children budget like any child, and is published at once (run row + `subagent/start`).
 */

export interface OutOfProcessStart {
  runId: string;
  /** The parent-scoped id the run is known by (`remote:<runId>`, `acp:<runId>`, `a2a:<runId>`). */
  id: string;
  depth: number;
  prompt: ContentBlock[];
}

export function prepareOutOfProcess(
  ctx: SessionContext,
  request: StartRequest,
  provider: ProviderRecord,
  kind: "remote" | "acp" | "a2a",
): Outcome<OutOfProcessStart> {
  if (request.childId !== undefined) {
    return fail("INVALID_REQUEST", `childId: provider ${provider.name} mints its own run id (${kind})`);
  }
  if (provider.url === undefined) return fail("NO_PROVIDER", `provider ${provider.name} has no url`);
  const depth = childDepth(ctx.header()!.delegationDepth, undefined, deploymentDepthCap(ctx.limits.depthCap));
  if (!depth.ok) return depth;
  const budget = childBudget(ctx);
  if (!budget.ok) return budget;
  const runId = newRunId();
  return ok({ runId, id: `${kind}:${runId}`, depth: depth.value, prompt: toBlocks(request.prompt) });
}

/** Inside the caller's transaction: the run row (running at once) and its `subagent/start`. */
export function publishOutOfProcess(
  ctx: SessionContext,
  start: OutOfProcessStart,
  run: {
    provider: ProviderRecord;
    descriptor: Descriptor;
    /** Its `trace`: the span that asked for it, whose trace the far side's work joins (`traceparent`). */
    request: RunStart;
    origin: RunOrigin | undefined;
    /** The model named in the record when the request names none (the far side picks its own). */
    defaultModel: string;
    placement?: Placement;
  },
  now = Date.now(),
): void {
  const { runs, log } = ctx.stores;
  const { provider, request, origin } = run;
  const spec: ChildInit = {
    ...childInit(
      ctx.header()!,
      {
        childId: start.id,
        depth: start.depth,
        options: { model: request.model ?? run.defaultModel },
        placement: run.placement ?? {},
      },
      { runId: start.runId, provider: provider.name, label: request.label },
    ),
    mode: "one-shot",
    descriptor: run.descriptor,
    prompt: start.prompt,
    ...compact({ trace: request.trace }),
  };
  runs.insert({
    runId: start.runId,
    childId: start.id,
    provider: provider.name,
    local: false,
    ...runs.originColumns(origin),
    spec,
    createdAt: now,
    deadlineAt: deadlineOf(request, now),
  });
  runs.markRunning(start.runId);
  log.append("subagent/start", { runId: start.runId, provider: provider.name, id: start.id, local: false });
}

/** The `traceparent` of a run's requests: the span that started it (README "Traces"), if any. */
export function traceparentOfRun(run: RunRow | undefined): string | undefined {
  const trace = run?.spec.trace;
  return trace ? traceparentOf(trace) : undefined;
}
