import { compact } from "../../src/core/compact";
import { loadCron } from "../../src/core/cron";
import { quote } from "../../src/core/quote";
import { fingerprint } from "../../src/core/hash";
import { isMcpFaceCall } from "../../src/core/approvals";
import type { SessionHost } from "../../src/agent/host";
import { fail, ok } from "../../src/contract/errors";
import { publicEntry } from "../../src/core/descendants";
import type { ContinuableChild } from "../delegation/continuable/continuable-child";
import type { ContinuableParent } from "../delegation/continuable/continuable-parent";
import { childEntriesOf, descendantsOf } from "../delegation/discovery";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import type { SessionContext } from "./session-context";
import type { SessionSchedules } from "../schedules/schedules";

/** What tools may ask of a session; the object's internals stay off the RPC surface. */
export function sessionHost(
  ctx: SessionContext,
  runs: OneShotRuns,
  children: ContinuableParent,
  self: ContinuableChild,
  schedules: SessionSchedules,
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
    scheduleMessage: async (request, callKey) => {
      // one schedule per tool call, whatever re-runs it; the session's id keeps it apart from the
      // same call in another session of the tree (a call key is a turn and a model's call id)
      const scheduleId = `sch_${fingerprint(`${id()}/${callKey}`)}`;
      if ("cron" in request) {
        await loadCron();
        const made = schedules.create(
          { cron: request.cron, content: request.message, ...compact({ timezone: request.timezone }) },
          "model",
          scheduleId,
        );
        return made.ok ? ok({ id: made.value.scheduleId, next: made.value.next }) : made;
      }
      const at = Date.now() + request.delaySeconds * 1000;
      const deferred = schedules.defer({
        content: request.message,
        at,
        delivery: "next-turn",
        source: "schedule",
        by: "model",
        scheduleId,
      });
      return deferred.ok ? ok({ id: deferred.value.messageId, next: at }) : deferred;
    },
    followup: (childId, { content, delivery, trace }, callKey) =>
      children.followup(
        childId,
        content,
        {
          kind: "coordinator",
          form: "relay",
          senderSessionId: id(),
          ...compact({ trace }),
          // made through the MCP face, or by a session below it: the child is below it too
          ...(isMcpFaceCall(callKey) || ctx.header()?.belowMcpFace ? { mcpFace: true as const } : {}),
        },
        { ...compact({ idempotencyKey: callKey, delivery }) },
      ),
    interruptAgent: (targetId) => children.interrupt(targetId, { kind: "ancestor", ancestorId: id() }),
    listAgents: async (scope) =>
      ok(scope === "children" ? (await childEntriesOf(ctx)).map(publicEntry) : await descendantsOf(ctx)),
    report: (report, callKey) =>
      self.report(report, ctx.header()?.options.reportDelivery ?? "next-step", callKey),
  };
}
