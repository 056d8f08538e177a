import { type AnswerTally, emptyTally } from "./answers";
import type { Violation } from "./checker";
import type { FarFault, FarPoint, FarStep } from "./far-side-plan";
import type { Op } from "./harness";

/**
 * What the far-side checker (far-side-checker.ts) reads and keeps: the shapes of a seed's
 * snapshot, and the ledger of a check: its violations and counts, and the causes it may name (the
 * faults and resets that could have produced an outcome, see `faultCause` and `resetCause`).
 */

export interface FarEvent {
  seq: number;
  type: string;
  /** `Date.now()` when it was written (the events' own `at`). */
  at: number;
  /** The event's data, read field by field as stored. */
  data: Record<string, any>;
}

export interface FarRun {
  runId: string;
  state: string;
  /** The run's result as stored (JSON), once settled. */
  result: string | null;
}

export interface FarSnapshot {
  /** The root session's events, in order. */
  log: FarEvent[];
  runs: FarRun[];
  /** How many sessions the far side made whose prompt carries each start's tag (remote, A2A). */
  farSessions: Record<string, number>;
  /** How many messages carrying each start's prompt the far sessions received (remote, A2A). */
  farPrompts: Record<string, number>;
  /** How many `shout` calls the MCP server served during the seed (its own count). */
  mcpServed: number;
  /** What the root still owes (outbox rows, pending messages, unfinished transports). */
  owed: string[];
}

/** Far operations counted by how they came out (the report's own figures). */
export interface FarFigures {
  /** Far operations sent (starts, MCP and tool messages, face calls). */
  operations: number;
  /** ... acknowledged by the session. */
  acknowledged: number;
  /** Operations not acknowledged (a face call cut off) and the injected cause of each. */
  cutOff: Record<string, number>;
}

export interface FarCheck {
  violations: Violation[];
  answers: AnswerTally;
  far: FarFigures;
}

/** The kinds of the history's far operations (the rest, create, abort and evict, act on the session). */
export const FAR_KINDS = ["far-start", "far-mcp", "far-tool", "far-face"] as const;

/** A reset that took effect: when, on both clocks (`at` as the history, `clock` as the events). */
export interface Reset {
  kind: string;
  at: number;
  clock: number;
}

/** From when to when an operation could be affected: `from` on the history's clock, the end on either. */
export interface Window {
  from: number;
  untilAt?: number;
  untilClock?: number;
}

export const RESTART_REFUSAL = /cut short by a restart of the session/;

export function textOf(content: unknown): string {
  if (!Array.isArray(content)) return typeof content === "string" ? content : "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

/** A pattern for a tag that does not also match the tags it is a prefix of (f1-1 and f1-10). */
export function tagPattern(words: string): RegExp {
  return new RegExp(`${words.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![0-9])`);
}

function within(window: Window, moment: { at: number; clock: number }): boolean {
  if (moment.at < window.from) return false;
  if (window.untilAt !== undefined && moment.at > window.untilAt) return false;
  if (window.untilClock !== undefined && moment.clock > window.untilClock) return false;
  return true;
}

/** The resets of the history that took effect (an abort that ran, an eviction that evicted). */
export function resetsOf(history: readonly Op[]): Reset[] {
  const out: Reset[] = [];
  for (const op of history) {
    if (op.kind !== "abort" && op.kind !== "evict") continue;
    const r = op.result ?? {};
    const effective = op.kind === "abort" ? r.outcome === "aborted" : r.evicted === true;
    if (effective && typeof r.effectAt === "number" && typeof r.effectClock === "number")
      out.push({ kind: op.kind, at: r.effectAt, clock: r.effectClock });
  }
  return out;
}

/** The campaign's step of a far operation (`op.input` is the step, as sent). */
export function stepOf<K extends FarStep["op"]>(op: Op): Extract<FarStep, { op: K }> {
  return op.input as unknown as Extract<FarStep, { op: K }>;
}

/** What names an operation in a faulted request: its prompt or arguments, its run's ids. */
function namesOf(op: Op, log: readonly FarEvent[]): RegExp[] {
  const tag = String(op.input?.tag);
  if (op.kind === "far-mcp") return [tagPattern(`mcp ${tag}`)];
  if (op.kind === "far-tool") return [tagPattern(`"tag":"${tag}"`)];
  if (op.kind === "far-face") return [tagPattern(`face ${tag}`)];
  const runId = String(op.result?.runId ?? "-");
  const remote = log
    .filter((e) => e.type === "subagent/remote" && e.data.runId === runId)
    .map((e) => tagPattern(String(e.data.remoteId)));
  return [tagPattern(`far ${tag}`), tagPattern(runId), ...remote];
}

export class Ledger {
  readonly violations: Violation[] = [];
  readonly answers = emptyTally();
  readonly far: FarFigures = { operations: 0, acknowledged: 0, cutOff: {} };
  readonly resets: Reset[];
  readonly #names: { op: Op; names: RegExp[] }[];

  constructor(
    readonly history: readonly Op[],
    readonly faults: readonly FarFault[],
    readonly snap: FarSnapshot,
  ) {
    this.resets = resetsOf(history);
    this.#names = history
      .filter((o) => (FAR_KINDS as readonly string[]).includes(o.kind))
      .map((op) => ({ op, names: namesOf(op, snap.log) }));
  }

  flag(category: Violation["category"], message: string): void {
    this.violations.push({ category, session: "r0", message });
  }

  refuse(reason: string): void {
    this.answers.refused[reason] = (this.answers.refused[reason] ?? 0) + 1;
  }

  cutOff(reason: string): void {
    this.far.cutOff[reason] = (this.far.cutOff[reason] ?? 0) + 1;
    this.refuse(reason);
  }

  /**
   * The first fault that could have caused `op`'s outcome: not a delay, on one of `paths`,
   * within `window`, on a request naming `op` or naming no operation. `undefined` when none.
   */
  faultCause(op: Op, paths: readonly FarPoint[], window: Window): string | undefined {
    const fault = this.faults.find(
      (f) => f.kind !== "delay" && paths.includes(f.point) && within(window, f) && this.#concerns(f, op),
    );
    return fault && `net-${fault.kind} at ${fault.point}`;
  }

  /** The resets that took effect within `window`, as a cause ("abort, evict"), or undefined. */
  resetCause(window: Window, atLeast = 1): string | undefined {
    const hits = this.resetsWithin(window);
    return hits.length >= atLeast ? [...new Set(hits.map((r) => r.kind))].sort().join(", ") : undefined;
  }

  /** The resets that took effect within `window`. */
  resetsWithin(window: Window): Reset[] {
    return this.resets.filter((r) => within(window, r));
  }

  #concerns(fault: FarFault, op: Op): boolean {
    const named = this.#names.filter(({ names }) => names.some((n) => n.test(fault.detail)));
    return named.length === 0 || named.some((n) => n.op === op);
  }

  events(type: string, where: (e: FarEvent) => boolean = () => true): FarEvent[] {
    return this.snap.log.filter((e) => e.type === type && where(e));
  }
}
