import type {
  ChildFollowup,
  ChildStart,
  ContinuableInit,
  FollowupInput,
  InterruptAuthority,
} from "../../../src/contract/continuable";
import { fail, ok } from "../../../src/contract/errors";
import { compact } from "../../../src/core/compact";
import { callerMethod, notFound, peerMethod } from "../../kernel/methods";
import type { Parts } from "../../session/session-parts";
import { takeTreeSlot } from "../tree-places";

const UNAVAILABLE = () =>
  fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");

/** Continuable delegation: a caller's children (started, followed up, interrupted, drained) and the child's side. */
export const continuableMethods = {
  startContinuable: callerMethod({
    need: "act",
    run: (parts: Parts, _call, spec: ChildStart) => parts.children.start(spec),
  }),
  followupChild: callerMethod({
    need: "act",
    run: (parts: Parts, _call, childId: string, { content, delivery, trace }: ChildFollowup) =>
      parts.children.followup(
        childId,
        content,
        { kind: "user", ...compact({ trace }) },
        compact({ delivery }),
      ),
  }),
  interruptChild: callerMethod({
    need: "act",
    run: (parts: Parts, { header }, childId: string) =>
      parts.children.interrupt(childId, { kind: "user", parentSessionId: header.id }),
  }),
  drainChildren: callerMethod({
    need: "act",
    run: (parts: Parts, _call, childIds?: string[]) => parts.drains.drain(childIds),
  }),
  /** Its parent creates a continuable child here, once its place in the tree is taken (tree-places.ts). */
  initContinuable: peerMethod({
    erased: notFound("this session was deleted"),
    absent: notFound("this session was deleted"),
    gate: async ({ exists, objects }, spec: ContinuableInit) => {
      const slot = await takeTreeSlot(spec, exists, (root) => objects.session(root));
      return slot.ok ? undefined : slot;
    },
    opens: () => true,
    run: (parts: Parts, spec: ContinuableInit) => parts.self.init(spec),
  }),
  followup: peerMethod({
    absent: UNAVAILABLE,
    deleting: UNAVAILABLE,
    run: (parts: Parts, input: FollowupInput) => parts.self.receiveFollowup(input),
  }),
  interruptBy: peerMethod({
    absent: (_authority: InterruptAuthority) => ok({ accepted: true as const }),
    run: (parts: Parts, authority: InterruptAuthority) => parts.self.interruptBy(authority),
  }),
  drainFrom: peerMethod({
    absent: async (_parentId: string) => ok({ drained: [] as string[] }),
    run: (parts: Parts, parentId: string) => parts.self.drainFrom(parentId),
  }),
  knowsEpoch: peerMethod({
    absent: (_runId: string) => false,
    run: (parts: Parts, runId: string) => parts.self.knowsEpoch(runId),
  }),
};
