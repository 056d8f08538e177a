import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { type FaultPointName, installFaults } from "../../src/core/faults";
import { allEvents, api } from "./helpers";

/**
 * Helpers of the delegation fault tests: stubs, fault plans that count the points they are called
 * at, a frozen clock that the test moves by hand, a bounded loop that fires due alarms until a
 * condition holds, readers of a session's SQLite tables, and the "exactly once" check of a
 * one-shot run.
 *
 * Three facts about workerd shape these helpers (observed with workerd 1.20261102):
 * - `evictDurableObject` is graceful: it waits for the object's in-flight requests (and an object
 *   whose request waits forever is never evicted; the call times out after 30 s with "it still has
 *   active references"). An object whose background turn driver is parked on a promise that never
 *   settles is evicted at once: that is how a test crashes an object mid-step. A plan that throws
 *   crashes the step too; the test then waits until the object is quiet and evicts it.
 * - A promise of the test that an object resolves (say, from inside a fault plan) runs the rest of
 *   the test in that object's I/O context, and that object can then never be evicted either. Plans
 *   therefore only record what they saw; the test polls.
 * - With real time, the outbox retry (250 ms) and the 5 s safety-net alarm fire on their own and
 *   race the evictions. `vi.setSystemTime` (visible inside the objects) freezes the clock an hour
 *   ahead: every alarm the objects arm is then an hour away in real time and fires only when the
 *   test runs it with `runDurableObjectAlarm`, after moving the frozen clock forward.
 */

export type SessionStub = DurableObjectStub<import("../../src/index").SessionObject>;

export function stub(id: string): SessionStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise that never settles: an instance parked on it never runs the code after the point. */
export function never(): Promise<void> {
  return new Promise<void>(() => {});
}

// ---- the frozen clock ----

export const clock = {
  /** Freezes `Date` (inside the objects too) an hour ahead of real time. Timers stay real. */
  freeze(): void {
    vi.setSystemTime(Date.now() + 3_600_000);
  },
  advance(ms: number): void {
    vi.setSystemTime(Date.now() + ms);
  },
  set(at: number): void {
    vi.setSystemTime(at);
  },
  release(): void {
    vi.useRealTimers();
  },
};

// ---- fault plans ----

/** What a rule answers at a fault point: nothing (go on), "throw" (crash there), or a promise (hold; a rejection crashes). */
export type FaultAction = undefined | "throw" | Promise<void>;
export type FaultRule = (point: FaultPointName, n: number) => FaultAction;

export interface Faults {
  /** Every point the plan was called at, in order. */
  readonly hits: FaultPointName[];
  /** How often the plan was called at `point`. */
  count(point: FaultPointName): number;
  /** Resolves once the plan was called at `point` at least `n` times (fails after `ms`). */
  reached(point: FaultPointName, n?: number, ms?: number): Promise<void>;
  remove(): void;
}

export const INJECTED = "injected fault";

const installed: (() => void)[] = [];

/**
 * Installs a plan for one session. `rule(point, n)` is asked at every point with the 1-based
 * number of the call at that point; "throw" crashes the object right there.
 */
export function faults(scope: string, rule: FaultRule = () => undefined): Faults {
  const hits: FaultPointName[] = [];
  const count = (point: FaultPointName): number => hits.filter((h) => h === point).length;
  const remove = installFaults(scope, (point) => {
    hits.push(point);
    const action = rule(point, count(point));
    if (action === "throw") throw new Error(`${INJECTED} at ${point} (#${count(point)})`);
    return action;
  });
  installed.push(remove);
  return {
    hits,
    count,
    // Polls instead of being resolved by the plan: a promise of the test resolved from inside an
    // object runs the rest of the test in that object's I/O context, and the object can then never
    // be evicted ("it still has active references").
    async reached(point, n = 1, ms = 5_000) {
      const deadline = performance.now() + ms;
      while (count(point) < n) {
        if (performance.now() > deadline)
          throw new Error(`timed out after ${ms} ms waiting for fault point ${point} #${n} of ${scope}`);
        await sleep(5);
      }
    },
    remove,
  };
}

/** Removes every plan installed by `faults` (call it after each test). */
export function removeAllFaults(): void {
  for (const remove of installed.splice(0)) remove();
}

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

// ---- reading a session's state ----

export type Row = Record<string, SqlStorageValue>;

/** Runs a query inside the session's object. */
export function sqlRows<T extends Row = Row>(
  id: string,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.sql.exec<T>(query, ...bindings).toArray(),
  );
}

export interface OutboxRow extends Row {
  id: string;
  target: string;
  kind: string;
  payload: string;
  attempts: number;
  next_at: number;
  delivered_at: number | null;
  dead_at: number | null;
  last_error: string | null;
}

export function outboxOf(id: string): Promise<OutboxRow[]> {
  return sqlRows<OutboxRow>(
    id,
    `SELECT id, target, kind, payload, attempts, next_at, delivered_at, dead_at, last_error
     FROM outbox ORDER BY position`,
  );
}

export function alarmOf(id: string): Promise<number | null> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.getAlarm(),
  );
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

export interface WireEvent {
  seq: number;
  type: string;
  at: number;
  data: any;
}

export function events(id: string): Promise<WireEvent[]> {
  return allEvents(id) as Promise<WireEvent[]>;
}

export function ofType(log: readonly WireEvent[], type: string): WireEvent[] {
  return log.filter((e) => e.type === type);
}

export function textOf(content: unknown): string {
  return Array.isArray(content) ? content.map((b: { text?: string }) => b.text ?? "").join("") : "";
}

/** Polls the session's log (bounded by rounds of real time) until `predicate` holds. */
export async function waitForLog(
  id: string,
  predicate: (log: WireEvent[]) => boolean,
  what: string,
  rounds = 250,
): Promise<WireEvent[]> {
  for (let round = 0; ; round++) {
    const log = await events(id);
    if (predicate(log)) return log;
    if (round >= rounds)
      throw new Error(`gave up waiting for ${what}; log: ${log.map((e) => e.type).join(",")}`);
    await sleep(20);
  }
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

/** Whether the parent recorded `subagent/end` for the run. */
export async function settled(parentId: string, runId: string): Promise<boolean> {
  const log = await events(parentId);
  return log.some((e) => e.type === "subagent/end" && e.data.runId === runId);
}

/** Whether the child's outbox holds rows and none is live and undelivered. */
export async function outboxDrained(childId: string): Promise<boolean> {
  const rows = await outboxOf(childId);
  return rows.length > 0 && rows.every((r) => r.delivered_at !== null || r.dead_at !== null);
}

// ---- moving the system along ----

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

/** Waits until the objects are quiet, then evicts each (memory is gone, SQLite stays). */
export async function evict(...ids: string[]): Promise<void> {
  await quiesce(ids);
  for (const id of ids) await within(evictDurableObject(stub(id)), 10_000, `the eviction of ${id}`);
}

/**
 * Moves the frozen clock forward and fires the alarm of every listed session, round after round,
 * until `done` holds (bounded by `rounds` of real time). An alarm handler that throws is re-armed
 * for the next round, as the platform retries a failed alarm. Returns the alarm errors seen.
 */
export async function driveUntil(
  ids: readonly string[],
  done: () => Promise<boolean>,
  what: string,
  { rounds = 60, stepMs = 1_000 }: { rounds?: number; stepMs?: number } = {},
): Promise<string[]> {
  const errors: string[] = [];
  for (let round = 0; round < rounds; round++) {
    if (await done()) return errors;
    clock.advance(stepMs);
    for (const id of ids) {
      try {
        await runDurableObjectAlarm(stub(id));
      } catch (error) {
        errors.push(String(error));
        await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
          state.storage.setAlarm(Date.now()),
        );
      }
    }
    await sleep(20);
  }
  if (await done()) return errors;
  throw new Error(`gave up waiting for ${what}; alarm errors: ${JSON.stringify(errors.slice(-5))}`);
}

/** Drives parent and child until the run settled in the parent and the child's outbox is empty of live rows. */
export function driveToSettlement(parentId: string, childId: string, runId: () => Promise<string>) {
  return driveUntil(
    [parentId, childId],
    async () => (await settled(parentId, await runId())) && (await outboxDrained(childId)),
    "the run to settle and the child's outbox to drain",
  );
}

// ---- the contract ----

export interface OneShot {
  parentId: string;
  childId: string;
  runId: string;
  /** The child's one answer. */
  output: string;
}

/**
 * The whole "exactly once" contract of a one-shot run after faults:
 * one `subagent/start` and one `subagent/end` (same run id, start first) in the parent's log; the
 * run settles with the right output; the child ran exactly one turn; the parent recorded the result
 * envelope once; no outbox row is left undelivered or dead on either side.
 */
export async function expectExactlyOnce({ parentId, childId, runId, output }: OneShot): Promise<void> {
  const parentLog = await events(parentId);
  const starts = ofType(parentLog, "subagent/start");
  const ends = ofType(parentLog, "subagent/end");
  expect(starts.map((e) => e.data)).toEqual([{ runId, provider: "spawn", id: childId, local: true }]);
  expect(ends.map((e) => e.data)).toEqual([
    {
      runId,
      provider: "spawn",
      id: childId,
      local: true,
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: output }],
    },
  ]);
  expect(starts[0]!.seq).toBeLessThan(ends[0]!.seq);
  expect(parentLog.map((e) => e.seq)).toEqual(parentLog.map((_, i) => i));

  const run = await api("GET", `/v1/sessions/${parentId}/runs/${runId}?wait=5000`);
  expect(run.status).toBe(200);
  expect(run.body).toEqual({
    runId,
    id: childId,
    provider: "spawn",
    local: true,
    state: "settled",
    result: { output: [{ type: "text", text: output }], stopReason: "completed" },
  });

  const childLog = await events(childId);
  expect(ofType(childLog, "turn/start")).toHaveLength(1);
  expect(ofType(childLog, "user/message")).toHaveLength(1);
  expect(ofType(childLog, "assistant/message").map((e) => textOf(e.data.content))).toEqual([output]);
  expect(ofType(childLog, "turn/end").map((e) => e.data.reason)).toEqual(["completed"]);
  expect(ofType(childLog, "outbox/dead-letter")).toEqual([]);
  expect(childLog.map((e) => e.seq)).toEqual(childLog.map((_, i) => i));

  const childOutbox = await outboxOf(childId);
  expect(childOutbox.map((r) => ({ id: r.id, target: r.target, kind: r.kind, dead: r.dead_at }))).toEqual([
    { id: `result:${runId}`, target: parentId, kind: "run-result", dead: null },
  ]);
  expect(childOutbox[0]!.delivered_at).not.toBeNull();

  expect(
    await sqlRows(parentId, "SELECT id FROM outbox WHERE delivered_at IS NULL OR dead_at IS NOT NULL"),
  ).toEqual([]);
  expect(await sqlRows(parentId, "SELECT envelope_id FROM seen")).toEqual([
    { envelope_id: `result:${runId}` },
  ]);
  expect(await sqlRows(parentId, "SELECT run_id, state FROM runs")).toEqual([
    { run_id: runId, state: "settled" },
  ]);
  expect(await sqlRows(parentId, "SELECT child_id, state FROM children")).toEqual([
    { child_id: childId, state: "released" },
  ]);
}

/**
 * Nothing moves any more: after evicting every object, moving the clock far ahead and firing any
 * alarm, the logs are unchanged and no alarm is left armed (no retry loop, no ghost wake-up).
 */
export async function expectQuiet(ids: readonly string[]): Promise<void> {
  const before = await Promise.all(ids.map(events));
  await evict(...ids);
  clock.advance(3_600_000);
  for (const id of ids) await runDurableObjectAlarm(stub(id));
  await quiesce(ids);
  expect(await Promise.all(ids.map(events))).toEqual(before);
  expect(await Promise.all(ids.map(alarmOf))).toEqual(ids.map(() => null));
}

/** Holds a session's fault point until released; `reached` resolves when it is hit. */
export function hold(scope: string, point: FaultPointName): { reached: Promise<void>; release(): void } {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => {
    reached = r;
  });
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held = false;
  const remove = installFaults(scope, (p) => {
    if (p !== point || held) return;
    held = true;
    reached();
    return released;
  });
  return {
    reached: reachedP,
    release() {
      release();
      remove();
    },
  };
}
