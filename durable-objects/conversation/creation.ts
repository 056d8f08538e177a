import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { SessionHeader } from "../../src/contract/session";
import type { CreateSession } from "../../src/contract/session-api";
import { compact } from "../../src/core/compact";
import { placementOf } from "../../src/core/placement";
import type { SessionStores } from "../store/session-stores";

/** The header of a top-level session (a child's is `childHeader`, delegation/child-spec.ts). */
export function rootHeader(input: CreateSession, now: number): SessionHeader {
  return {
    id: input.id,
    parentSession: null,
    origin: null,
    delegationDepth: input.delegationDepth ?? 0,
    createdAt: now,
    tokenHash: input.tokenHash,
    lineage: [],
    ...compact({ tenant: input.tenant }),
    options: input.options,
    ...compact({ label: input.label }),
    ...placementOf(input),
    ...compact({ callback: input.callback }),
    ...compact({ createKey: input.createKey }),
  };
}

/**
 * Creates a top-level session. The same `createKey` and tenant again is a replay of the first
 * creation (answered with the session as it is now); anything else on an existing id is refused.
 */
export function createSession(
  stores: SessionStores,
  input: CreateSession,
): Outcome<{ header: SessionHeader; replayed: boolean }> {
  const existing = stores.header.get();
  if (existing) {
    if (input.createKey === undefined || existing.createKey === undefined)
      return fail("DUPLICATE_CHILD", `session ${input.id} already exists`);
    return existing.createKey === input.createKey && existing.tenant === input.tenant
      ? ok({ header: existing, replayed: true })
      : fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with a different body");
  }
  const header = rootHeader(input, Date.now());
  stores.transact(() => stores.header.set(header));
  return ok({ header, replayed: false });
}
