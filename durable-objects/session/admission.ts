import { toBlocks } from "../../src/contract/content";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import { newMessageId } from "../../src/contract/ids";
import type { SendInput } from "../../src/contract/session-api";
import { compact } from "../../src/core/compact";
import { fingerprint } from "../../src/core/hash";
import { messageQuota } from "../../src/core/quotas";
import type { SessionContext } from "./session-context";

/**
 * A user's message into the session's inbox (`next-turn`, waking), idempotent by its key. A
 * refused message stores nothing: MAX_PENDING_MESSAGES and MAX_LOG_BYTES (src/core/quotas.ts).
 * A full inbox parked by an interrupt resumes (its turns free places); a full log does not.
 * Accepted work (and a resumed full inbox) runs the drive loop.
 */
export function admitUserMessage(ctx: SessionContext, input: SendInput): Outcome<{ messageId: string }> {
  const { stores } = ctx;
  const content = toBlocks(input.content);
  const quota = messageQuota(stores.log.bytes(), ctx.limits);
  const admitted = stores.transact(() => {
    const result = stores.inbox.admit({
      messageId: newMessageId(),
      lane: "next-turn",
      waking: true,
      source: { kind: "user" },
      content,
      contentHash: fingerprint(JSON.stringify(content)),
      ...compact({ idempotencyKey: input.idempotencyKey }),
      capacity: quota.capacity,
    });
    const loop = stores.loop.get();
    if (result.kind === "accepted" || (result.kind === "full" && quota.capacity > 0 && loop.parked))
      stores.loop.set({ ...loop, parked: false });
    return result;
  });
  if (admitted.kind === "full") {
    if (quota.capacity > 0) ctx.kick();
    return quota.refusal;
  }
  if (admitted.kind === "conflict")
    return fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
  if (admitted.kind === "accepted") ctx.kick();
  return ok({ messageId: admitted.messageId });
}
