import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { type FaultPointName, installFaults } from "../../src/core/faults";
import { drainObjects } from "./drain";
import { ADMIN, bounded, injected, sleep, sqlOf, stubOf, workerFetch } from "./objects";
import { reservedId } from "../support/ids";
import { CHILD_REFS } from "./prompts";
import { ABORT_REASON, type FaultKind, type FaultRule } from "./scenario";

export {
  ADMIN,
  advanceClock,
  allObjects,
  bounded,
  restoreClock,
  sleep,
  sqlOf,
  stubOf,
} from "./objects";

/**
 * The campaign's machinery inside workerd: HTTP calls recorded as a history, fault rules turned
 * into fault plans, resets (graceful evictions and hard `ctx.abort()`s, both bounded), discovery of
 * the children models start, and the drain that fires every owed alarm until nothing moves, on a
 * mocked clock so backoffs elapse at once.
 *
 * Notes from building it:
 * - Fault plans never resolve a promise the test created: a promise settled from inside an object
 *   pins that object (workerd then refuses to evict it for 30 s: "it still has active references").
 * - `evictDurableObject` waits for in-flight work (a model's think, an RPC); a hard crash in the
 *   middle of a step needs `ctx.abort()`, after which stubs that reached the object are broken:
 *   every call here takes a fresh stub.
 * - `runDurableObjectAlarm` consumes the alarm even when the handler throws; the platform would
 *   retry it, so the drain calls `alarm()` again with a retry count, as the platform does.
 */

/**
 * Rounds of the drain (five mocked minutes each) with alarms firing and nothing moving after which
 * it counts as quiet: long enough for a parent's watchdog at its longest interval to look twice.
 */

/**
 * Fault points inside a call that catches errors (the model call, the summarizing call and the
 * compaction around it, whose failure the step outlives): a crash there is a reset.
 */
const RESETTING_POINTS = new Set<FaultPointName>([
  "before-model",
  "after-model",
  "before-compact",
  "after-compact",
]);

export type Outcome = "ok" | "fail" | "ambiguous";

/** One operation of the history. */
export interface Op {
  id: number;
  kind: string;
  /** The session reference it acted on (r0, h1, m:r0:0). */
  target: string;
  start: number;
  end: number;
  outcome: Outcome;
  status?: number;
  code?: string;
  /** What the answer said: messageId, runId, childId. */
  result?: Record<string, unknown>;
  /** What the operation sent that the checker needs (tag, key, content, expected answers). */
  input?: Record<string, unknown>;
  /**
   * When it was sent and answered on the sessions' own clock (`Date.now()`, which their logs'
   * `at` use, mocked during the drain): what orders it against a turn's start and end.
   */
  wall?: { start: number; end: number };
}

export interface Fired {
  kind: FaultKind;
  point: string;
  scope: string;
  /** When it fired, on the sessions' clock (see `Op.wall`). */
  at?: number;
}

/** An instance reset (`ctx.abort()`) the reaper made after an `abort` rule condemned it. */
export interface Reset {
  scope: string;
  /** On the sessions' clock (see `Op.wall`): from the abort's start to its end. */
  start: number;
  end: number;
}

export interface Hits {
  /** Times each point was reached in a scope that had a plan. */
  points: Partial<Record<FaultPointName, number>>;
}

export class Runner {
  readonly history: Op[] = [];
  readonly fired: Fired[] = [];
  /** The resets the reaper made (an `abort` rule's firing is in `fired`; its reset comes a little later). */
  readonly resets: Reset[] = [];
  readonly hits: Hits = { points: {} };
  /** Session reference -> session id. */
  readonly ids = new Map<string, string>();
  readonly notes: string[] = [];
  /** Instances a fired `abort` rule condemned; the reaper aborts them. */
  readonly #condemned = new Set<string>();
  readonly #plans = new Map<string, () => void>();
  readonly #ruleState = new Map<FaultRule, number>();
  /** Alarms of its scope each `lost-alarm` rule saw delivered (its `after`). */
  readonly #alarmsSeen = new Map<FaultRule, number>();
  readonly #pending: Promise<unknown>[] = [];
  #opId = 0;
  #reaping = false;
  #reaper: Promise<void> | undefined;
  evictBusy = 0;
  alarmErrors = 0;

  constructor(
    readonly seed: number,
    readonly rules: readonly FaultRule[],
  ) {}

  refOf(id: string): string {
    for (const [ref, value] of this.ids) if (value === id) return ref;
    return id;
  }

  // ---- fault plans ----

  /** Binds a reference to a session id and installs the rules scoped to it (once). */
  bind(ref: string, id: string): void {
    if (this.ids.get(ref) === id && this.#plans.has(id)) return;
    this.ids.set(ref, id);
    // a lost alarm is the platform's doing (see #fireAlarm), not a plan inside the object
    const rules = this.rules.filter((r) => r.scope === ref && r.kind !== "lost-alarm");
    if (rules.length === 0 || this.#plans.has(id)) return;
    const counts: Partial<Record<FaultPointName, number>> = {};
    // Runs inside the object: plain counters only, and a synchronous throw.
    const remove = installFaults(id, (point) => {
      const n = (counts[point] ?? 0) + 1;
      counts[point] = n;
      this.hits.points[point] = (this.hits.points[point] ?? 0) + 1;
      for (const rule of rules) {
        if (rule.point !== point || n <= rule.after) continue;
        const done = this.#ruleState.get(rule) ?? 0;
        if (done >= rule.times) continue;
        this.#ruleState.set(rule, done + 1);
        this.fired.push({ kind: rule.kind, point, scope: ref, at: Date.now() });
        // a delay, created inside the object, lets later sends and deliveries overtake this one
        if (rule.kind === "delay") return new Promise<void>((resolve) => setTimeout(resolve, rule.ms ?? 20));
        // a crash is the object going down at that point (the platform's semantics): inside the
        // model call, where a thrown error would be a failed call, the instance is reset too
        if (rule.kind === "abort" || (rule.kind === "crash" && RESETTING_POINTS.has(point)))
          this.#condemned.add(id);
        throw injected(rule.kind, point, this.seed);
      }
    });
    this.#plans.set(id, remove);
  }

  removePlans(): void {
    for (const remove of this.#plans.values()) remove();
    this.#plans.clear();
  }

  // ---- evictions ----

  /** Evicts an instance; a busy one (work in flight) is given 1.5 s, then left to the platform. */
  async evict(id: string): Promise<"evicted" | "not-running" | "busy"> {
    const attempt = evictDurableObject(stubOf(id));
    const done = await bounded(
      attempt.then(
        () => "evicted" as const,
        (error: unknown) => {
          if (String(error).includes("not currently running")) return "not-running" as const;
          this.notes.push(`evict ${this.refOf(id)}: ${String(error).slice(0, 120)}`);
          return "not-running" as const;
        },
      ),
      1_500,
    );
    if (done) return done.value;
    this.evictBusy++;
    this.#pending.push(attempt.catch(() => {}));
    return "busy";
  }

  /** Evicts what `abort` rules condemned, in the background while operations run. */
  startReaper(): void {
    this.#reaping = true;
    this.#reaper = (async () => {
      while (this.#reaping) {
        await this.reap();
        await sleep(3);
      }
    })();
  }

  async stopReaper(): Promise<void> {
    this.#reaping = false;
    await this.#reaper;
    await this.reap();
  }

  async reap(): Promise<void> {
    for (const id of [...this.#condemned]) {
      this.#condemned.delete(id);
      const start = Date.now();
      await this.abort(id);
      this.resets.push({ scope: this.refOf(id), start, end: Date.now() });
    }
  }

  /** Resets an instance at once (`ctx.abort()`): in-flight work dies with it, storage stays. */
  async abort(id: string): Promise<"aborted" | "timeout"> {
    const done = await bounded(
      runInDurableObject(stubOf(id), (_instance: unknown, state: DurableObjectState) => {
        state.abort(ABORT_REASON);
      }).then(
        () => "aborted" as const,
        () => "aborted" as const,
      ),
      3_000,
    );
    return done ? done.value : "timeout";
  }

  /** Runs the alarm handler once more (alarms are at-least-once and may fire twice). */
  async alarmAgain(id: string): Promise<"ran" | "threw" | "timeout"> {
    const done = await bounded(
      runInDurableObject(stubOf(id), async (instance: unknown) => {
        const object = instance as { alarm(info: AlarmInvocationInfo): Promise<void> };
        await object.alarm({ isRetry: false, retryCount: 0, scheduledTime: Date.now() });
      }).then(
        () => "ran" as const,
        () => "threw" as const,
      ),
      5_000,
    );
    return done ? done.value : "timeout";
  }

  // ---- HTTP operations, recorded ----

  async call(
    kind: string,
    target: string,
    method: string,
    path: string,
    body?: unknown,
    input?: Record<string, unknown>,
  ): Promise<Op> {
    const op: Op = { id: ++this.#opId, kind, target, start: performance.now(), end: 0, outcome: "ambiguous" };
    const wallStart = Date.now();
    if (input) op.input = input;
    this.history.push(op);
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const request = new Request(`http://example.com${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
    const answer = await bounded(
      workerFetch(request).then(async (response) => ({
        status: response.status,
        text: await response.text(),
      })),
      20_000,
    );
    op.end = performance.now();
    op.wall = { start: wallStart, end: Date.now() };
    if (!answer) {
      op.code = "TIMEOUT";
      return op;
    }
    op.status = answer.value.status;
    let parsed: unknown;
    try {
      parsed = answer.value.text ? JSON.parse(answer.value.text) : undefined;
    } catch {
      parsed = answer.value.text;
    }
    const status = answer.value.status;
    if (status < 300) {
      op.outcome = "ok";
      if (parsed && typeof parsed === "object") op.result = parsed as Record<string, unknown>;
    } else {
      const code = (parsed as { error?: { code?: string } } | undefined)?.error?.code;
      if (code) op.code = code;
      // 5xx: the effect may or may not have happened (OVERLOADED starts may land and be cancelled)
      op.outcome = status >= 500 ? "ambiguous" : "fail";
    }
    return op;
  }

  /** A non-HTTP operation (an eviction, a storm) in the history. */
  record(
    kind: string,
    target: string,
    start: number,
    outcome: Outcome,
    result?: Record<string, unknown>,
  ): Op {
    const op: Op = { id: ++this.#opId, kind, target, start, end: performance.now(), outcome };
    // `start` was taken with performance.now(): the sessions' clock then is as far behind as it is
    op.wall = { start: Date.now() - (op.end - start), end: Date.now() };
    if (result) op.result = result;
    this.history.push(op);
    return op;
  }

  // ---- discovery and the drain ----

  /**
   * Binds children started by a model (`m:<parent ref>:<n>`, numbered in discovery order) so the
   * rules and steps that name them apply; grandchildren are found through their parents.
   */
  async discoverModelChildren(httpChildIds: ReadonlySet<string>): Promise<void> {
    for (const [ref, id] of [...this.ids]) {
      const rows = await sqlOf<{ child_id: string }>(
        id,
        "SELECT child_id FROM children ORDER BY created_at, child_id",
      ).catch(() => []);
      const bound = new Set(this.ids.values());
      for (const { child_id: childId } of rows) {
        if (bound.has(childId) || httpChildIds.has(childId)) continue;
        const n = [...this.ids.keys()].filter((k) => k.startsWith(`m:${ref}:`)).length;
        this.bind(`m:${ref}:${n}`, childId);
        bound.add(childId);
      }
    }
  }

  /** Fires every owed alarm until nothing moves (drain.ts). */
  drain(
    objects: () => Promise<DurableObjectId[]>,
    roots: () => readonly string[] = () => [],
    options: { rounds?: number; stepMs?: number } = {},
  ): Promise<boolean> {
    return drainObjects(this, objects, roots, options);
  }

  /**
   * A `lost-alarm` rule of this object that is due: its alarm is then not delivered but deleted,
   * as if the platform had lost it (owed work stays owed, with no wake-up).
   */
  losesAlarm(id: DurableObjectId): FaultRule | undefined {
    for (const rule of this.rules) {
      if (rule.kind !== "lost-alarm") continue;
      const sessionId = this.ids.get(rule.scope);
      if (sessionId === undefined || env.SESSIONS.idFromName(sessionId).toString() !== id.toString())
        continue;
      const seen = (this.#alarmsSeen.get(rule) ?? 0) + 1;
      this.#alarmsSeen.set(rule, seen);
      const done = this.#ruleState.get(rule) ?? 0;
      if (seen <= rule.after || done >= rule.times) continue;
      this.#ruleState.set(rule, done + 1);
      return rule;
    }
    return undefined;
  }

  async settle(): Promise<void> {
    await Promise.all(this.#pending.map((p) => bounded(p, 1_000)));
  }
}

/**
 * Binds a child a step starts over HTTP with a reserved `childId`, once its parent (`parentRef`)
 * exists: the child's id is derived from the parent's id and that `childId` (a reserved id lives
 * in its parent's namespace), so its rules are installed before it exists. A child whose parent
 * was never created is never started and stays unbound.
 */
export function bindReserved(
  runner: Runner,
  child: { ref: string; childId: string; id: string },
  parentRef: string,
): void {
  const parent = runner.ids.get(parentRef);
  if (parent === undefined) return;
  child.id = reservedId(parent, child.childId);
  runner.bind(child.ref, child.id);
}

/** `content` with each `childRef` (prompts.ts) replaced by that child's bound id. */
export function withChildIds(runner: Runner, content: string): string {
  return content.replace(CHILD_REFS, (ref, name: string) => runner.ids.get(name) ?? ref);
}
