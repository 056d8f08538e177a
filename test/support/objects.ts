import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { ChildInit } from "../../src/contract/child-init";
import { FIRST_USE_DDL, TABLES_ON_FIRST_USE, tablesIn } from "../../durable-objects/store/schema";
import type { SessionObject } from "../../src/index";
import { sleep, textOf } from "./logs";

/**
 * A session's Durable Object from the inside: its stub, SQL queries against its own SQLite
 * database (rows, dumps and hashes of every table, the outbox, the inbox, the owned children),
 * its alarm, and evicting it once it is quiet.
 */

export type SessionStub = DurableObjectStub<SessionObject>;

/** The stub of the session object named `id` (the object is created on first use). */
export function stub(id: string): SessionStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}

/** The provider registry's object. */
export function registryStub(): DurableObjectStub {
  return env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
}

export type Row = Record<string, SqlStorageValue>;

/**
 * Creates the tables a session creates on first use (schema.ts) that this initialized object lacks,
 * empty, as their stores' first use would, so a test can write rows into any of them. The live
 * instance does not know of tables made behind it (every write of the product goes through its
 * stores): a test that writes them evicts the object afterwards, as a restart would. (An empty
 * such table and an absent one are the same state: `dumpTables` leaves both out.)
 */
export function useFirstUseTables(sql: SqlStorage): void {
  const present = tablesIn(sql);
  if (!present.has("meta")) return; // never initialized: stays empty
  for (const table of TABLES_ON_FIRST_USE) if (!present.has(table)) sql.exec(FIRST_USE_DDL[table]);
}

/** A first-use table the query names that the object does not have yet (it reads as empty). */
function absentFirstUseTable(error: unknown): boolean {
  const table = /no such table: (\w+)/.exec(String(error))?.[1];
  return table !== undefined && (TABLES_ON_FIRST_USE as readonly string[]).includes(table);
}

/**
 * Runs a query inside the session's object. A read of a table created on first use that the
 * object does not have yet answers no rows, as the table would (nothing is created).
 */
export function sqlRows<T extends Row = Row>(
  id: string,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    rowsOf<T>(state.storage.sql, query, ...bindings),
  );
}

/** `sqlRows` over an object's SQL from inside it. */
export function rowsOf<T extends Row = Row>(
  sql: SqlStorage,
  query: string,
  ...bindings: SqlStorageValue[]
): T[] {
  try {
    return sql.exec<T>(query, ...bindings).toArray();
  } catch (error) {
    if (/^\s*SELECT/i.test(query) && absentFirstUseTable(error)) return [];
    throw error;
  }
}

/** Every row of every user table of an object's database (a session id or any stub), sorted. */
export function dumpTables(target: string | DurableObjectStub): Promise<Record<string, Row[]>> {
  const object = typeof target === "string" ? stub(target) : target;
  return runInDurableObject(object, (_instance: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const tables = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_"));
    const onFirstUse = new Set<string>(TABLES_ON_FIRST_USE);
    const out: Record<string, Row[]> = {};
    for (const name of tables) {
      const rows = sql.exec<Row>(`SELECT * FROM "${name}"`).toArray();
      if (rows.length === 0 && onFirstUse.has(name)) continue; // the same state as not created yet
      out[name] = rows
        .map((r) =>
          JSON.stringify(r, (_k, v: unknown) => (v instanceof ArrayBuffer ? [...new Uint8Array(v)] : v)),
        )
        .sort()
        .map((r) => JSON.parse(r) as Row);
    }
    return out;
  });
}

/** SHA-256 (hex) of a value's JSON text. */
export async function hashOf(value: unknown): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(value)));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** SHA-256 over every row of every table of the session's database, and its alarm. */
export async function tablesHash(id: string): Promise<string> {
  return hashOf({ tables: await dumpTables(id), alarm: await alarmOf(id) });
}

/** The names of the session's tables (none for an object that was never created). */
export function tablesOf(id: string): Promise<string[]> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_")),
  );
}

export function alarmOf(id: string): Promise<number | null> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.getAlarm(),
  );
}

// ---- tables of one session ----

export interface OutboxRow extends Row {
  id: string;
  target: string;
  kind: string;
  payload: string;
  attempts: number;
  sends: number;
  next_at: number;
  delivered_at: number | null;
  dead_at: number | null;
  last_error: string | null;
}

export function outboxOf(id: string): Promise<OutboxRow[]> {
  return sqlRows<OutboxRow>(
    id,
    `SELECT id, target, kind, payload, attempts, sends, next_at, delivered_at, dead_at, last_error
     FROM outbox ORDER BY position`,
  );
}

/** Whether the session's outbox holds rows and none is live and undelivered. */
export async function outboxDrained(id: string): Promise<boolean> {
  const rows = await outboxOf(id);
  return rows.length > 0 && rows.every((r) => r.delivered_at !== null || r.dead_at !== null);
}

/** What a session received into its inbox (content included), in acceptance order. */
export async function inboxOf(
  id: string,
): Promise<{ messageId: string; lane: string; waking: boolean; state: string; source: any; text: string }[]> {
  const rows = await sqlRows<{
    message_id: string;
    lane: string;
    waking: number;
    state: string;
    source: string;
    content: string;
  }>(id, "SELECT message_id, lane, waking, state, source, content FROM inbox ORDER BY position");
  return rows.map((r) => ({
    messageId: r.message_id,
    lane: r.lane,
    waking: r.waking === 1,
    state: r.state,
    source: JSON.parse(r.source),
    text: textOf(JSON.parse(r.content)),
  }));
}

/** The settlement notices a parent received from one child. */
export async function noticesFrom(parent: string, childId: string) {
  return (await inboxOf(parent)).filter(
    (m) => m.source.kind === "subagent-settled" && m.source.senderSessionId === childId,
  );
}

/** A continuable child's activation row (its current epoch), if any. */
export function activationOf(id: string): Promise<Row[]> {
  return sqlRows(id, "SELECT epoch, run_id, provider FROM activation");
}

/** The children a session started, in creation order. */
export function childRows(id: string): Promise<Row[]> {
  return sqlRows(id, "SELECT child_id, mode, state, provider FROM children ORDER BY created_at, child_id");
}

/** The id of the one run a parent reserved for `childId` (also before it was published). */
export async function runIdFor(parentId: string, childId: string): Promise<string> {
  const rows = await sqlRows<{ run_id: string }>(
    parentId,
    "SELECT run_id FROM runs WHERE child_id = ?",
    childId,
  );
  expect(rows).toHaveLength(1);
  return rows[0]!.run_id;
}

/** The spec a parent reserved for its one-shot child (what `init` is called with). */
export async function specOf(parentId: string, childId: string): Promise<ChildInit> {
  const rows = await sqlRows<{ spec: string }>(parentId, "SELECT spec FROM runs WHERE child_id = ?", childId);
  return JSON.parse(rows[0]!.spec) as ChildInit;
}

// ---- quiet and eviction ----

/** Resolves `promise` or fails after `ms` of real time with `what` in the message. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** A snapshot that changes whenever an object does anything durable. */
async function footprint(id: string): Promise<string> {
  return runInDurableObject(stub(id), async (_instance: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const tables = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'")
      .toArray();
    const alarm = await state.storage.getAlarm();
    if (tables.length === 0) return JSON.stringify({ alarm });
    const seq = sql.exec<{ n: number | null }>("SELECT max(seq) AS n FROM events").one().n;
    const outbox = sql
      .exec("SELECT id, attempts, delivered_at, dead_at FROM outbox ORDER BY position")
      .toArray();
    return JSON.stringify({ alarm, seq, outbox });
  });
}

/**
 * Waits until none of the objects changes its durable state for a while: whatever an earlier
 * request started in the background has finished (or is parked for good), so an eviction now
 * drains at once.
 */
export async function quiesce(ids: readonly string[], rounds = 100): Promise<void> {
  let last = "";
  let stable = 0;
  for (let round = 0; round < rounds; round++) {
    const now = JSON.stringify(await Promise.all(ids.map(footprint)));
    stable = now === last ? stable + 1 : 0;
    if (stable >= 2) return;
    last = now;
    await sleep(30);
  }
  throw new Error(`objects ${ids.join(", ")} never became quiet`);
}

/**
 * Waits until the objects are quiet, then evicts each (memory is gone, SQLite stays). The
 * eviction is graceful: it waits for the object's in-flight requests (faults.ts says why that
 * matters for an object parked mid-step).
 */
export async function evict(...ids: string[]): Promise<void> {
  await quiesce(ids);
  for (const id of ids) await within(evictDurableObject(stub(id)), 10_000, `the eviction of ${id}`);
}
