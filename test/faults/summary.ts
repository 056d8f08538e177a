import { CATEGORIES, type Category, type Violation } from "./checker";
import type { AnswerTally } from "./answers";
import type { Fired, Outcome } from "./harness";

/**
 * What one seed reports (attached to its test case's `meta`) and how the reporter folds the seeds
 * into the summary line and test-results/faults.json. Plain data only: it crosses from workerd
 * to the vitest process.
 */

export interface SeedReport {
  seed: number;
  ms: number;
  ops: { kind: string; outcome: Outcome }[];
  injected: Fired[];
  /** Times each fault point was reached in a scope that had a plan. */
  pointHits: Record<string, number>;
  violations: Violation[];
  /** Acknowledged operations compared with the ledger of answers (answers.ts). */
  answers: AnswerTally;
  /** Operations refused or cut off, by what they got and the cause that explains it (refusals.ts). */
  unanswered?: Record<string, number>;
  notes: string[];
  quiesced: boolean;
  sessions: number;
  evictBusy: number;
  alarmRetries: number;
  /** Milliseconds per phase: creating the roots, the operations, the drains, the check. */
  phases: { setup: number; ops: number; drain: number; check: number };
  /** For a failing seed: its rules, history and every session's log and tables, as text. */
  detail?: string;
}

export interface Summary {
  command: string;
  seeds: number;
  seedList: number[];
  ops: number;
  ok: number;
  okPercent: number;
  fail: number;
  ambiguous: number;
  injected: number;
  survived: number;
  lost: number;
  duplicated: number;
  unexpected: number;
  orphaned: number;
  stuck: number;
  seqGaps: number;
  wrong: number;
  /** Acknowledged operations whose outcome was compared with the ledger, and how they came out. */
  answersChecked: number;
  answeredAsExpected: number;
  refusedByReason: Record<string, number>;
  /** Operations refused or cut off, by what they got and the injected cause that explains each. */
  unansweredByCause: Record<string, number>;
  sessions: number;
  notQuiesced: number[];
  opsByKind: Record<string, Record<Outcome | "total", number>>;
  faultsByKind: Record<string, { injected: number; survived: number }>;
  faultsByPoint: Record<string, { injected: number; survived: number; reached: number }>;
  faultsByKindAndPoint: Record<string, number>;
  /** Each named fault point and how many faults fired there (a point never fired is absent). */
  faultPointsFired: Record<string, number>;
  failingSeeds: { seed: number; violations: Violation[]; detail?: string }[];
  perSeed: { seed: number; ops: number; ok: number; injected: number; violations: number; ms: number }[];
  notes: Record<string, number>;
}

/** The value under `key`, created by `init` the first time. */
function slot<T>(record: Record<string, T>, key: string, init: () => T): T {
  const existing = record[key];
  if (existing !== undefined) return existing;
  const created = init();
  record[key] = created;
  return created;
}

export function summarize(reports: readonly SeedReport[], command: string): Summary {
  const count = (category: Category): number =>
    reports.reduce((n, r) => n + r.violations.filter((v) => v.category === category).length, 0);
  const ops = reports.flatMap((r) => r.ops);
  const ok = ops.filter((o) => o.outcome === "ok").length;
  const opsByKind: Summary["opsByKind"] = {};
  for (const op of ops) {
    const row = slot(opsByKind, op.kind, () => ({ total: 0, ok: 0, fail: 0, ambiguous: 0 }));
    row.total++;
    row[op.outcome]++;
  }
  const faultsByKind: Summary["faultsByKind"] = {};
  const faultsByPoint: Summary["faultsByPoint"] = {};
  const faultsByKindAndPoint: Record<string, number> = {};
  for (const r of reports) {
    const clean = r.violations.length === 0;
    for (const f of r.injected) {
      const k = slot(faultsByKind, f.kind, () => ({ injected: 0, survived: 0 }));
      const p = slot(faultsByPoint, f.point, () => ({ injected: 0, survived: 0, reached: 0 }));
      k.injected++;
      p.injected++;
      if (clean) {
        k.survived++;
        p.survived++;
      }
      const key = `${f.kind} @ ${f.point}`;
      faultsByKindAndPoint[key] = (faultsByKindAndPoint[key] ?? 0) + 1;
    }
    for (const [point, n] of Object.entries(r.pointHits))
      slot(faultsByPoint, point, () => ({ injected: 0, survived: 0, reached: 0 })).reached += n;
  }
  const notes: Record<string, number> = {};
  for (const r of reports) {
    for (const note of r.notes) {
      const key = note
        .replace(/[0-9a-f]{8}(-[0-9a-f-]{27})?/g, "<id>")
        .replace(/\bh\d+\b|\bm:r\d:\d\b/g, "<ref>");
      notes[key] = (notes[key] ?? 0) + 1;
    }
  }
  const injected = reports.reduce((n, r) => n + r.injected.length, 0);
  const survived = reports.reduce((n, r) => n + (r.violations.length === 0 ? r.injected.length : 0), 0);
  return {
    command,
    seeds: reports.length,
    seedList: reports.map((r) => r.seed),
    ops: ops.length,
    ok,
    okPercent: ops.length === 0 ? 0 : Math.round((1000 * ok) / ops.length) / 10,
    fail: ops.filter((o) => o.outcome === "fail").length,
    ambiguous: ops.filter((o) => o.outcome === "ambiguous").length,
    injected,
    survived,
    lost: count("lost"),
    duplicated: count("duplicated"),
    unexpected: count("unexpected"),
    orphaned: count("orphaned"),
    stuck: count("stuck"),
    seqGaps: count("seq-gaps"),
    wrong: count("wrong"),
    answersChecked: reports.reduce((n, r) => n + r.answers.checked, 0),
    answeredAsExpected: reports.reduce((n, r) => n + r.answers.asExpected, 0),
    refusedByReason: reports.reduce<Record<string, number>>((all, r) => {
      for (const [reason, k] of Object.entries(r.answers.refused)) all[reason] = (all[reason] ?? 0) + k;
      return all;
    }, {}),
    unansweredByCause: reports.reduce<Record<string, number>>((all, r) => {
      for (const [cause, k] of Object.entries(r.unanswered ?? {})) all[cause] = (all[cause] ?? 0) + k;
      return all;
    }, {}),
    sessions: reports.reduce((n, r) => n + r.sessions, 0),
    notQuiesced: reports.filter((r) => !r.quiesced).map((r) => r.seed),
    opsByKind,
    faultsByKind,
    faultsByPoint,
    faultsByKindAndPoint,
    faultPointsFired: Object.fromEntries(
      Object.entries(faultsByPoint)
        .filter(([, f]) => f.injected > 0)
        .map(([point, f]) => [point, f.injected]),
    ),
    failingSeeds: reports
      .filter((r) => r.violations.length > 0)
      .map((r) => ({
        seed: r.seed,
        violations: r.violations,
        detail: `test-results/faults/seed-${r.seed}.txt`,
      })),
    notes,
    perSeed: reports.map((r) => ({
      seed: r.seed,
      ops: r.ops.length,
      ok: r.ops.filter((o) => o.outcome === "ok").length,
      injected: r.injected.length,
      violations: r.violations.length,
      ms: r.ms,
    })),
  };
}

/** The one summary line, in the form of README's Reliability table. */
export function summaryLine(s: Summary): string {
  const kinds = Object.entries(s.faultsByKind)
    .map(([kind, f]) => `${kind}=${f.injected}`)
    .join(",");
  return (
    `faults: seeds=${s.seeds} ops=${s.ops} ok=${s.ok} (${s.okPercent}%) fail=${s.fail} ambiguous=${s.ambiguous} ` +
    `injected=${s.injected} [${kinds}] points=${Object.keys(s.faultPointsFired).length} ` +
    `survived=${s.survived} answers-checked=${s.answersChecked} as-expected=${s.answeredAsExpected} ` +
    `refused=${Object.values(s.refusedByReason).reduce((n, k) => n + k, 0)} ` +
    `unanswered-explained=${Object.values(s.unansweredByCause).reduce((n, k) => n + k, 0)} wrong=${s.wrong} ` +
    `lost=${s.lost} duplicated=${s.duplicated} unexpected=${s.unexpected} ` +
    `orphaned=${s.orphaned} stuck=${s.stuck} seq-gaps=${s.seqGaps}`
  );
}

export { CATEGORIES };
