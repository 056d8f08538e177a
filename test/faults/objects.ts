import { listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { vi } from "vitest";
import { type FaultPointName, REGISTRY_FAULT_SCOPE } from "../../src/core/faults";
import { rowsOf } from "../support/objects";
import type { RuleKind } from "./scenario";

/**
 * The campaign's access to the objects inside workerd: stubs (taken fresh for every call: an
 * aborted instance breaks the stubs that reached it), the Worker's fetch, the drain's mocked
 * clock, SQL reads, and what the drain probes of an object.
 */

export const ADMIN = "test-admin-token";

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves `promise`, or `undefined` after `ms` (the promise keeps running; its failure is swallowed). */
export async function bounded<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  promise.catch(() => {});
  try {
    return await Promise.race([promise.then((value) => ({ value })), timeout]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** A session's object, or the registry's for its fault scope. */
export function stubOf(id: string): DurableObjectStub {
  if (id === REGISTRY_FAULT_SCOPE) return env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}

export function workerFetch(request: Request): Promise<Response> {
  const main = exports as unknown as { default: { fetch(request: Request): Promise<Response> } };
  return main.default.fetch(request);
}

/** The mocked clock of the drain: only ever moves forward, and returns to real time after a seed. */
let clockOffset = 0;
export function advanceClock(ms: number): void {
  clockOffset += ms;
  vi.setSystemTime(new Date(realNow() + clockOffset));
}
export function restoreClock(): void {
  clockOffset = 0;
  vi.useRealTimers();
}
function realNow(): number {
  return performance.timeOrigin + performance.now();
}

export function injected(kind: RuleKind, point: FaultPointName, seed: number): Error {
  const error = new Error(`injected ${kind} at ${point} (fault campaign seed ${seed})`);
  if (kind === "overloaded") (error as Error & { overloaded: boolean }).overloaded = true;
  return error;
}

export function sqlOf<T extends Record<string, SqlStorageValue>>(
  id: string,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(stubOf(id), (_instance: unknown, state: DurableObjectState) =>
    rowsOf<T>(state.storage.sql, query, ...bindings),
  );
}

/** Every session object of the namespace (this test file's storage). */
export async function allObjects(): Promise<DurableObjectId[]> {
  return listDurableObjectIds(env.SESSIONS);
}

/**
 * An object's armed alarm (`null` when none; `undefined` when it did not answer) and a fingerprint
 * of how far it got: log length, pending inbox, undelivered outbox, delivery attempts.
 */
export async function probe(
  id: DurableObjectId,
): Promise<{ alarm: number | null | undefined; signature: string }> {
  const read = await bounded(
    runInDurableObject(env.SESSIONS.get(id), async (_i: unknown, state: DurableObjectState) => {
      const sql = state.storage.sql;
      const has = (t: string): boolean =>
        sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
      const alarm = await state.storage.getAlarm();
      if (!has("events")) return { alarm, signature: "-" };
      const n = (q: string): number => Number(sql.exec<{ n: number }>(q).one().n);
      const signature = [
        n("SELECT count(*) AS n FROM events"),
        n("SELECT count(*) AS n FROM inbox WHERE state = 'pending'"),
        has("outbox")
          ? n("SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL")
          : 0,
        // a delivery being retried is movement too
        has("outbox") ? n("SELECT coalesce(sum(attempts), 0) AS n FROM outbox") : 0,
      ].join(".");
      return { alarm, signature };
    }),
    5_000,
  );
  return read ? read.value : { alarm: undefined, signature: "?" };
}
