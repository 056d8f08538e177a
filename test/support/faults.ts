import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { expect, vi } from "vitest";
import { type FaultPointName, installFaults } from "../../src/core/faults";
import { api, createSession } from "./api";
import { allEvents, hasSettled, ofType, sleep, textOf } from "./logs";
import { alarmOf, evict, outboxDrained, outboxOf, quiesce, runIdFor, sqlRows, stub } from "./objects";
import { reservedId } from "./ids";

/**
 * Fault injection for the workerd tests: fault plans at the runtime's named fault points
 * (src/core/faults.ts), holding an object at a point until the test releases it, a frozen clock
 * the test moves by hand, a bounded loop that fires due alarms until a condition holds, and the
 * "exactly once" check of a one-shot run.
 *
 * Three facts about workerd shape these helpers (observed with workerd 1.20261102):
 * - `evictDurableObject` is graceful: it waits for the object's in-flight requests (and an object
 *   whose request waits forever is never evicted; the call times out after 30 s with "it still has
 *   active references"). An object whose background turn driver is parked on a promise that never
 *   settles is evicted at once: that is how a test crashes an object mid-step. A plan that throws
 *   crashes the step too; the test then waits until the object is quiet and evicts it.
 * - A promise of the test that an object resolves (say, from inside a fault plan) runs the rest of
 *   the test in that object's I/O context, and that object can then never be evicted either. Plans
 *   that must let the object be evicted therefore only record what they saw; the test polls
 *   (`Faults.reached`).
 * - With real time, the outbox retry (250 ms) and the 5 s safety-net alarm fire on their own and
 *   race the evictions. `vi.setSystemTime` (visible inside the objects) freezes the clock an hour
 *   ahead: every alarm the objects arm is then an hour away in real time and fires only when the
 *   test runs it with `runDurableObjectAlarm`, after moving the frozen clock forward.
 */

/** A promise that never settles: an instance parked on it never runs the code after the point. */
export function never(): Promise<void> {
  return new Promise<void>(() => {});
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  settled(): boolean;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let done = false;
  const promise = new Promise<T>((r) => {
    resolve = (value) => {
      done = true;
      r(value);
    };
  });
  return { promise, resolve, settled: () => done };
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

/**
 * What a rule answers at a fault point: nothing (go on), "throw" (crash there with an injected
 * error), or a promise (hold; a rejection crashes). A rule may also throw an error of its own.
 */
export type FaultAction = void | "throw" | Promise<void>;
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
 * Installs a plan for one session (the scope is its id). `rule(point, n)` is asked at every point
 * with the 1-based number of the call at that point; "throw" crashes the object right there.
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

/** Removes every plan installed by `faults` or `hold` (call it after each test). */
export function removeAllFaults(): void {
  for (const remove of installed.splice(0)) remove();
}

export interface Hold {
  /** Resolves when the point is first hit (from inside the object). */
  reached: Promise<void>;
  /** Lets the held call go on; later calls pass (and are still counted). */
  release(): void;
  /** How often the session was asked about `point` while the plan was installed. */
  count(point: FaultPointName): number;
  /** Releases the held call and removes the plan. */
  remove(): void;
}

/**
 * Holds a session at the first call of a fault point until released (later calls pass), and
 * counts every point it is asked about. `reached` is resolved from inside the object: a test that
 * awaits it must not evict that object afterwards (see above).
 */
export function hold(scope: string, point: FaultPointName): Hold {
  const hits: FaultPointName[] = [];
  let reached!: () => void;
  const reachedP = new Promise<void>((r) => {
    reached = r;
  });
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held = false;
  const uninstall = installFaults(scope, (p) => {
    hits.push(p);
    if (p !== point || held) return;
    held = true;
    reached();
    return released;
  });
  installed.push(uninstall);
  return {
    reached: reachedP,
    release() {
      release();
    },
    count: (p) => hits.filter((h) => h === p).length,
    remove() {
      release();
      uninstall();
    },
  };
}

// ---- a one-shot run under faults ----

export interface Started {
  parentId: string;
  /** The child's id (derived from the parent's id and `reserved`). */
  childId: string;
  /** The `childId` the start reserved: a retry of the start names it again. */
  reserved: string;
  /** The HTTP status of `POST /v1/sessions/:id/subagents`. */
  status: number;
  body: any;
  /** The prompt the start was made with (a retry of the same request repeats it). */
  prompt: string;
  output: string;
  parentFaults: Faults;
  childFaults: Faults;
  /** The run id: from the start's answer, else from the parent's `runs` table. */
  runId(): Promise<string>;
}

export interface StartOptions {
  /** The child's fault plan; gets the ids because some plans call back into the objects. */
  child?: (ids: { parentId: string; childId: string }) => FaultRule;
  parent?: FaultRule;
  /** The child's prompt and the answer it yields (default: a plain text the scripted model echoes). */
  script?: { prompt: string; output: string };
}

/**
 * Creates a parent and starts a one-shot `spawn` child with a caller-chosen id over HTTP, with a
 * fault plan installed on each side first (none by default). The start's answer is kept as is: a
 * test may expect it to fail.
 */
export async function startWithFaults(label: string, options: StartOptions = {}): Promise<Started> {
  const parent = await createSession();
  const parentId = parent.id;
  const reserved = crypto.randomUUID();
  const childId = reservedId(parentId, reserved);
  const childFaults = faults(childId, options.child?.({ parentId, childId }));
  const parentFaults = faults(parentId, options.parent);
  const prompt = options.script?.prompt ?? `fault test: ${label}`;
  const res = await api("POST", `/v1/sessions/${parentId}/subagents`, {
    body: { provider: "spawn", prompt, mode: "one-shot", childId: reserved },
  });
  const output = options.script?.output ?? `echo: ${prompt}`;
  return {
    parentId,
    childId,
    reserved,
    status: res.status,
    body: res.body,
    prompt,
    output,
    parentFaults,
    childFaults,
    runId: async () => (res.status === 201 ? (res.body.runId as string) : runIdFor(parentId, childId)),
  };
}

// ---- moving the system along under the frozen clock ----

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
    async () => (await hasSettled(parentId, await runId())) && (await outboxDrained(childId)),
    "the run to settle and the child's outbox to drain",
  );
}

// ---- the one-shot run after faults ----

export interface OneShot {
  parentId: string;
  childId: string;
  runId: string;
  /** The child's one answer. */
  output: string;
}

/**
 * The whole "exactly once" rule of a one-shot run (semantics.md §5.3) after faults:
 * one `subagent/start` and one `subagent/end` (same run id, start first) in the parent's log; the
 * run settles with the right output; the child ran exactly one turn; the parent recorded the result
 * envelope once; no outbox row is left undelivered or dead on either side.
 */
export async function expectExactlyOnce({ parentId, childId, runId, output }: OneShot): Promise<void> {
  const parentLog = await allEvents(parentId);
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

  const childLog = await allEvents(childId);
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
 * Nothing moves any more: after evicting every object, moving the frozen clock far ahead and
 * firing any alarm, the logs are unchanged and no alarm is left armed (no retry loop, no ghost
 * wake-up).
 */
export async function expectQuiet(ids: readonly string[]): Promise<void> {
  const before = await Promise.all(ids.map((id) => allEvents(id)));
  await evict(...ids);
  clock.advance(3_600_000);
  for (const id of ids) await runDurableObjectAlarm(stub(id));
  await quiesce(ids);
  expect(await Promise.all(ids.map((id) => allEvents(id)))).toEqual(before);
  expect(await Promise.all(ids.map(alarmOf))).toEqual(ids.map(() => null));
}
