import { toBlocks } from "../../src/contract/content";
import { MAX_PENDING_STEERS, type MessageDelivery } from "../../src/contract/control";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import { newMessageId } from "../../src/contract/ids";
import type { SendInput } from "../../src/contract/session-api";
import type { TurnControl } from "../../src/agent/turn-control";
import { compact } from "../../src/core/compact";
import { fingerprint } from "../../src/core/hash";
import { messageQuota } from "../../src/core/quotas";
import type { Admission } from "../store/inbox";
import type { SessionContext } from "../session/session-context";

/** The cause in the `turn/end` of a turn a message delivered as `interrupt` replaced. */
export const INTERRUPT_DELIVERY_CAUSE = "a new message replaced the turn (delivery: interrupt)";

/**
 * A user's message into the session's inbox (waking), idempotent by its key, joining the
 * session's work as its `delivery` says (see `placement`). (One with a `notBefore` ahead waits
 * with the session's schedules instead: schedules.ts.) A refused message stores nothing: MAX_PENDING_MESSAGES,
 * MAX_LOG_BYTES (src/core/quotas.ts) and MAX_PENDING_STEERS. A full
 * inbox parked by an interrupt resumes (its turns free places); a full log does not. Accepted
 * work (and a resumed full inbox) runs the drive loop.
 */
export function admitUserMessage(ctx: SessionContext, input: SendInput): Outcome<{ messageId: string }> {
  const { stores } = ctx;
  const content = toBlocks(input.content);
  const quota = messageQuota(stores.log.bytes(), ctx.limits);
  const delivery = input.delivery ?? "next-turn";
  // a replay must name the same delivery too (the default's hash is the content's alone)
  const contentHash = fingerprint(JSON.stringify(delivery === "next-turn" ? content : { content, delivery }));
  // the same key as a message still waiting for its time: that message
  const deferred =
    input.idempotencyKey === undefined ? undefined : stores.schedules.byIdempotencyKey(input.idempotencyKey);
  if (deferred)
    return deferred.contentHash === contentHash
      ? ok({ messageId: deferred.messageId! })
      : fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
  let interrupted = false;
  const admitted = stores.transact(() => {
    const result = stores.inbox.admit({
      messageId: newMessageId(),
      ...placement(delivery),
      waking: true,
      source: { kind: "user", ...compact({ trace: input.trace }) },
      content,
      contentHash,
      ...compact({ idempotencyKey: input.idempotencyKey }),
      capacity: quota.capacity,
    });
    if (result.kind === "accepted") interrupted = replaceRunningTurn(delivery, ctx);
    const loop = stores.loop.get();
    if (result.kind === "accepted" || (result.kind === "full" && quota.capacity > 0 && loop.parked))
      stores.loop.set({ ...loop, parked: false });
    return result;
  });
  if (interrupted) ctx.turns.abortInFlight(INTERRUPT_DELIVERY_CAUSE);
  if (admitted.kind === "full") {
    if (quota.capacity > 0) ctx.kick();
    return quota.refusal;
  }
  if (admitted.kind === "steers-full") return steersFull();
  if (admitted.kind === "conflict")
    return fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
  if (admitted.kind === "accepted") ctx.kick();
  return ok({ messageId: admitted.messageId });
}

/**
 * Where a caller's message goes in the inbox: `next-turn` at the end of the turn queue,
 * `next-step` in the steering lane (the running turn's next step claims it; bounded), `interrupt`
 * first in the turn queue (and `replaceRunningTurn` ends the running turn).
 */
export function placement(delivery: MessageDelivery): Pick<Admission, "lane" | "first" | "steerCapacity"> {
  if (delivery === "next-step") return { lane: "next-step", steerCapacity: MAX_PENDING_STEERS };
  return delivery === "interrupt" ? { lane: "next-turn", first: true } : { lane: "next-turn" };
}

/**
 * Inside the transaction that accepted a message delivered as `interrupt`: the running turn ends
 * `aborted` (its foreground children are cancelled, its approvals denied), and the message, first
 * in the queue, is the next turn; what was queued runs after it. True when a turn was ended: the
 * caller aborts the calls in flight once the transaction committed.
 */
export function replaceRunningTurn(
  delivery: MessageDelivery,
  { stores, turns }: { stores: { loop: { get(): { openTurn: number | null } } }; turns: TurnControl },
): boolean {
  if (delivery !== "interrupt" || stores.loop.get().openTurn === null) return false;
  return turns.closeForInterrupt(INTERRUPT_DELIVERY_CAUSE);
}

/** The refusal of a steering message past MAX_PENDING_STEERS. */
export function steersFull(): Outcome<never> {
  return fail(
    "INBOX_FULL",
    `${MAX_PENDING_STEERS} steering messages already wait for this session's next step (MAX_PENDING_STEERS); retry once it took them`,
  );
}
