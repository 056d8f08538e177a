import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { type ApiResult, field } from "./api";
import { TABLES_ON_FIRST_USE } from "../../durable-objects/store/schema";
import { hashOf, stub, useFirstUseTables } from "./objects";

/**
 * The quotas' tests (src/core/quotas.ts) run against the defaults of wrangler.toml, as every
 * other limit's test does: the state just under a quota is written behind the session's object
 * (which is evicted afterwards, as a restart would read it), then the next request meets it.
 */

/** wrangler.toml's MAX_SESSIONS_PER_TREE, MAX_PENDING_MESSAGES and MAX_LOG_BYTES. */
export const MAX_SESSIONS_PER_TREE = 10_000;
export const MAX_PENDING_MESSAGES = 1_000;
export const MAX_LOG_BYTES = 268_435_456;

/** Expects `res` to be the refusal `status code` whose message matches `message`. */
export function expectRefused(res: ApiResult, status: number, code: string, message: RegExp): void {
  expect(
    { status: res.status, code: field(res.body, "error", "code") },
    `answer: ${JSON.stringify(res.body)?.slice(0, 400)}`,
  ).toEqual({ status, code });
  expect(field<string>(res.body, "error", "message")).toMatch(message);
}

/**
 * SHA-256 over every object's tables and alarm, as `dumpTables` reads them (an empty table made on
 * first use is the same state as none), but with the log summed up (its rows' count, last seq and
 * bytes: any append changes them) rather than read whole: a log-quota test holds 256 MiB of it.
 */
export async function stateOf(objects: readonly DurableObjectStub[]): Promise<string> {
  return hashOf(await Promise.all(objects.map(digestOf)));
}

function digestOf(o: DurableObjectStub): Promise<unknown> {
  return runInDurableObject(o, async (_i: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const names = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_"));
    const onFirstUse = new Set<string>(TABLES_ON_FIRST_USE);
    const tables: Record<string, unknown> = {};
    for (const name of names) {
      if (name === "events") {
        tables[name] = sql
          .exec("SELECT count(*) AS n, max(seq) AS last, sum(octet_length(data)) AS bytes FROM events")
          .one();
        continue;
      }
      const rows = sql.exec(`SELECT * FROM "${name}"`).toArray();
      if (rows.length === 0 && onFirstUse.has(name)) continue; // the same state as not created yet
      tables[name] = rows
        .map((r) =>
          JSON.stringify(r, (_k, v: unknown) => (v instanceof ArrayBuffer ? [...new Uint8Array(v)] : v)),
        )
        .sort();
    }
    return { tables, alarm: await state.storage.getAlarm() };
  });
}

/**
 * Writes behind a top-level session's object that `deeper` sessions below its children already
 * took their place in its tree (as their inits did); the caller evicts it afterwards.
 */
export async function setTreeSlots(rootId: string, deeper: number): Promise<void> {
  await runInDurableObject(stub(rootId), (_i: unknown, state: DurableObjectState) => {
    useFirstUseTables(state.storage.sql);
    state.storage.sql.exec(
      "INSERT INTO flags (name, value) VALUES ('tree-slots', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      String(deeper),
    );
  });
}

/** How many deeper sessions a root counts in its tree (0 before any). */
export async function treeSlots(rootId: string): Promise<number> {
  return runInDurableObject(stub(rootId), (_i: unknown, state: DurableObjectState) => {
    useFirstUseTables(state.storage.sql);
    const row = state.storage.sql
      .exec<{ value: string }>("SELECT value FROM flags WHERE name = 'tree-slots'")
      .toArray()[0];
    return row === undefined ? 0 : Number(row.value);
  });
}

/** The bytes of event data a session's log holds (what MAX_LOG_BYTES bounds). */
export function logBytes(id: string): Promise<number> {
  return runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) =>
    Number(
      state.storage.sql
        .exec<{ b: number }>("SELECT coalesce(sum(octet_length(data)), 0) AS b FROM events")
        .one().b,
    ),
  );
}

/** The most bytes one filler row carries (a row is capped at 2 MB). */
const FILLER_ROW_BYTES = 1_600_000;

/**
 * Appends filler events behind a quiet session's object until its log holds exactly
 * `MAX_LOG_BYTES - room` bytes (`agent/inbox/claimed` rows with a padding field: a type no part
 * reads back in bulk). The caller evicts the object afterwards. Returns the seq of the last filler
 * row (read the log after it: the filler is hundreds of megabytes).
 */
export async function fillLog(id: string, room: number): Promise<number> {
  return runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const now = sql
      .exec<{ bytes: number; last: number }>(
        "SELECT coalesce(sum(octet_length(data)), 0) AS bytes, max(seq) AS last FROM events",
      )
      .one();
    const need = MAX_LOG_BYTES - room - Number(now.bytes);
    const rows = Math.ceil(need / FILLER_ROW_BYTES);
    const each = Math.floor(need / rows);
    state.storage.transactionSync(() => {
      for (let i = 0; i < rows; i++) {
        const size = i < rows - 1 ? each : need - each * (rows - 1);
        const head = `{"messageId":"filler-${i}","turn":0,"pad":"`;
        const pad = size - head.length - 2;
        sql.exec(
          "INSERT INTO events (seq, type, at, data) VALUES (?, 'agent/inbox/claimed', ?, ? || substr(hex(zeroblob(?)), 1, ?) || '\"}')",
          Number(now.last) + 1 + i,
          Date.now(),
          head,
          Math.ceil(pad / 2),
          pad,
        );
      }
    });
    return Number(now.last) + rows;
  });
}

/**
 * Queues user messages behind a session's object, as accepted messages would be (an inbox row and
 * its `agent/inbox/inserted` event each, in order); the caller evicts (or aborts) the object
 * afterwards, so that a fresh instance reads them.
 */
export async function queueBehind(id: string, texts: readonly string[]): Promise<void> {
  await runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    state.storage.transactionSync(() => {
      const { seq, position } = sql
        .exec<{ seq: number; position: number }>(
          "SELECT (SELECT max(seq) FROM events) AS seq, (SELECT coalesce(max(position), 0) FROM inbox) AS position",
        )
        .one();
      for (const [i, text] of texts.entries()) {
        const messageId = `msg_queued_${crypto.randomUUID()}`;
        sql.exec(
          "INSERT INTO inbox (message_id, position, lane, waking, source, content, state, content_hash) VALUES (?, ?, 'next-turn', 1, ?, ?, 'pending', ?)",
          messageId,
          position + 1 + i,
          JSON.stringify({ kind: "user" }),
          JSON.stringify([{ type: "text", text }]),
          messageId,
        );
        sql.exec(
          "INSERT INTO events (seq, type, at, data) VALUES (?, 'agent/inbox/inserted', ?, ?)",
          seq + 1 + i,
          Date.now(),
          JSON.stringify({ messageId, lane: "next-turn", waking: true, source: { kind: "user" } }),
        );
      }
    });
  });
}
