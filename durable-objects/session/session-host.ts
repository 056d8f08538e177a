import { quote } from "../../src/core/quote";
import type { SessionHost } from "../../src/agent/host";
import { fail, ok } from "../../src/contract/errors";
import { publicEntry } from "../../src/core/descendants";
import type { ContinuableChild } from "../delegation/continuable/continuable-child";
import type { ContinuableParent } from "../delegation/continuable/continuable-parent";
import { childEntriesOf, descendantsOf } from "./discovery";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import type { SessionContext } from "./session-context";

/** What tools may ask of a session; the object's internals stay off the RPC surface. */
export function sessionHost(
  ctx: SessionContext,
  runs: OneShotRuns,
  children: ContinuableParent,
  self: ContinuableChild,
): SessionHost {
  const id = (): string => ctx.header()?.id ?? "";
  return {
    get sessionId() {
      return id();
    },
    startRun: (request, origin) => runs.start(request, origin),
    task: (taskId) => {
      const run = ctx.stores.runs.byTaskId(taskId);
      return run ? runs.view(run) : undefined;
    },
    killTask: (taskId, reason) => {
      const run = ctx.stores.runs.byTaskId(taskId);
      return run ? runs.dispose(run.runId, reason) : fail("NOT_FOUND", `unknown task ${quote(taskId)}`);
    },
    startContinuable: (request, callKey) => children.start(request, callKey),
    followup: (childId, text, callKey) =>
      children.followup(
        childId,
        text,
        { kind: "coordinator", form: "relay", senderSessionId: id() },
        callKey,
      ),
    interruptAgent: (targetId) => children.interrupt(targetId, { kind: "ancestor", ancestorId: id() }),
    listAgents: async (scope) =>
      ok(scope === "children" ? (await childEntriesOf(ctx)).map(publicEntry) : await descendantsOf(ctx)),
    report: (text, callKey) =>
      self.report(text, ctx.header()?.options.reportDelivery ?? "next-step", callKey),
  };
}
