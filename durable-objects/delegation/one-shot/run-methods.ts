import type { ChildInit } from "../../../src/contract/child-init";
import { fail, ok } from "../../../src/contract/errors";
import type { RunStart } from "../../../src/contract/run";
import { quote } from "../../../src/core/quote";
import { callerMethod, notFound, peerMethod } from "../../kernel/methods";
import type { CallbackInput } from "../../messaging/remote-callbacks";
import type { Parts } from "../../session/session-parts";
import { takeTreeSlot } from "../tree-places";

/** One-shot delegation: a caller's runs (started, awaited, disposed) and the child's creation. */
export const runMethods = {
  startRun: callerMethod({
    need: "act",
    run: async (parts: Parts, _call, start: RunStart) => {
      const started = await parts.runs.start(start);
      return started.ok
        ? ok({ runId: started.value.runId, id: started.value.id, local: started.value.local })
        : started;
    },
  }),
  runStatus: callerMethod({
    need: "read",
    run: async (parts: Parts, _call, runId: string, waitMs: number) => {
      const run = await parts.runs.waitFor(runId, waitMs);
      return run ? ok(parts.runs.view(run)) : fail("NOT_FOUND", `no run ${quote(runId)}`);
    },
  }),
  disposeRun: callerMethod({
    need: "act",
    run: (parts: Parts, _call, runId: string) => parts.runs.dispose(runId),
  }),
  /** A signed callback from another deployment with a remote run's result (remote-callbacks.ts). */
  remoteCallback: peerMethod({
    absent: notFound("no such run"), // never created: nothing to apply to
    run: (parts: Parts, runId: string, input: CallbackInput) => parts.remoteCallback(runId, input),
  }),
  /** Its parent creates a one-shot child here, once its place in the tree is taken (tree-places.ts). */
  init: peerMethod({
    erased: notFound("this session was deleted"),
    absent: notFound("this session was deleted"),
    gate: async ({ exists, objects }, spec: ChildInit) => {
      const slot = await takeTreeSlot(spec, exists, (root) => objects.session(root));
      return slot.ok ? undefined : slot;
    },
    opens: () => true,
    run: (parts: Parts, spec: ChildInit) => parts.oneShot.init(spec),
  }),
};
