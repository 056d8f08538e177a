import type { FaultPointName } from "../../src/core/faults";
import { type ControlAction, type ControlPlan, planControl } from "./control-plan";
import { Rng } from "./prng";
import { continuablePrompt, followupContent, oneShotPrompt, rootMessage } from "./prompts";

/**
 * The schedule generator: per seed, a small forest of sessions, the operations a client runs
 * against it, and the fault rules installed at the runtime's named fault points. Everything here
 * is a pure function of the seed; ids of sessions the server creates are bound at run time.
 */

export const POINTS: readonly FaultPointName[] = [
  "before-drive",
  "before-model",
  "after-model",
  "before-append",
  "after-append",
  "before-send",
  "after-send",
  "before-apply",
  "in-alarm",
  "in-init",
];

/**
 * Points of the rules drawn from their own stream, also checked to fire: storage failures, and
 * the platform's delivery of an alarm (where the harness loses one; not a point of the runtime).
 */
export const EXTRA_POINTS: readonly string[] = [
  "in-transaction",
  "alarm-delivery",
  "in-registry",
  "before-compact",
  "after-compact",
  "mid-delete",
];

/** The provider registry's scope in rules (one object per deployment). */
export const REGISTRY_REF = "registry";

/** What a reset's `ctx.abort()` says: the error calls in flight to the instance fail with. */
export const ABORT_REASON = "fault campaign: abort";

/** How a rule acts when it fires at its point. */
export type RuleKind =
  /**
   * throws a plain error right there (the call chain unwinds; the instance lives on), and inside
   * the model call, which would take the error as a failed call, also resets the instance
   */
  | "crash"
  /** throws, then the test aborts the instance (`ctx.abort()`): memory and in-flight work are gone */
  | "abort"
  /** throws an error with `overloaded = true` */
  | "overloaded"
  /** `after-send` throws: the receiver applied the envelope, the sender saw a failure */
  | "ambiguous"
  /** `in-alarm` throws: the alarm fails and is retried */
  | "alarm"
  /** waits `ms` right there: a send or a delivery is overtaken by later ones (reordering) */
  | "delay"
  /** `in-transaction` throws as a storage transaction commits: it is rolled back, like a failed write */
  | "storage"
  /**
   * the platform loses the object's next alarm (`alarm-delivery`): it never fires and is gone, so
   * owed work waits for a repair (the parent's watchdog, a request that touches the object, a boot)
   */
  | "lost-alarm";

/** Every kind of injected fault the summary counts (rules plus resets between operations). */
export type FaultKind =
  | RuleKind
  | "evict"
  | "reset-storm"
  /** the far-side campaign's network faults (far-side.ts) */
  | "net-down"
  | "net-lose-answer"
  | "net-overloaded"
  | "net-delay";

export interface FaultRule {
  /** A session reference: a root ("r0"), an HTTP-started child ("h0") or a model-started one ("m:r0:0"). */
  scope: string;
  point: FaultPointName;
  kind: RuleKind;
  /** Hits of the point to let pass before the first firing. */
  after: number;
  /** How many times the rule fires at most. */
  times: number;
  /** For `delay`: how long it waits. */
  ms?: number;
}

export interface RootSpec {
  ref: string;
  backgroundMode: "continuable" | "one-shot";
  /** A window that makes the session compact before most steps (`SMALL_CONTEXT_WINDOW`). */
  contextWindow?: number;
  /** Tools whose calls wait for a decision (README "Approvals"): `["echo"]` in some seeds. */
  requireApproval?: string[];
  /** Denies an approval still pending after that long. */
  approvalTimeoutSeconds?: number;
}

/** The tool the schedule's gated calls call (only they call it). */
export const GATED_TOOL = "echo";

/** Why the client denies, once the schedule is over, what is still pending (steps.ts). */
export const SCHEDULE_END = "the schedule ended";

/** Tokens: less than the scripted session's tool specs alone, so every step past the second turn compacts. */
export const SMALL_CONTEXT_WINDOW = 1000;

export interface ChildSpec {
  ref: string;
  root: string;
  mode: "one-shot" | "continuable";
  /** The `childId` its start reserves (caller-chosen), so its id is known before the child exists. */
  childId: string;
  /**
   * Its session id: derived from its root's id and `childId` once the root exists (harness.ts
   * `bindReserved`, which installs its faults then); empty while the root does not exist.
   */
  id: string;
}

/**
 * A child a scripted model starts, in the ledger: the `subagent` call that starts it (its
 * `description` carries the tag, so it is unique), and what the child must answer.
 */
export interface ModelChild {
  description: string;
  /** `run_in_background`: a background task or a continuable child; otherwise a foreground run. */
  background: boolean;
  /** The child's scripted answer; absent for a scripted failure. */
  answer?: string;
  /** The children its own model starts. */
  children: ModelChild[];
}

export type Step =
  | {
      op: "send";
      root: string;
      tag: string;
      content: string;
      key: string;
      answers: string[];
      children: ModelChild[];
      /** For a message whose script calls the gated tool: the text it echoes (unique per call). */
      gated?: string;
    }
  | { op: "resend"; root: string; of: string }
  | { op: "conflict"; root: string; of: string }
  | { op: "start-one-shot"; child: string; tag: string; prompt: string; answers: string[] }
  | {
      op: "start-continuable";
      child: string;
      tag: string;
      prompt: string;
      answers: string[];
      children: ModelChild[];
    }
  | { op: "followup"; child: string; tag: string; content: string; answers: string[] }
  | { op: "interrupt"; root: string }
  | { op: "interrupt-child"; child: string }
  | { op: "dispose"; child: string }
  | { op: "drain"; root: string; children?: string[] }
  | { op: "evict"; target: string }
  | { op: "abort"; target: string; delayMs?: number }
  | { op: "alarm"; target: string }
  | { op: "storm"; targets: string[]; count: number; gapMs: number; hard: boolean }
  | { op: "pause"; ms: number }
  /**
   * Lists the root's pending approvals and decides the one of the gated call that echoes `gated`
   * (skipped when it never shows up as pending: its turn is not there yet, or has already ended)
   */
  | {
      op: "decide";
      root: string;
      gated: string;
      decision: "approve" | "deny";
      reason?: string;
      /** Waits this long first (a decision that comes late: a short timeout may pass first). */
      delayMs?: number;
    }
  /** Control over time: steering, messages for later, schedules, deadlines, deletion (control-plan.ts). */
  | { op: "control"; action: ControlAction }
  | { op: "together"; steps: Step[] };

export interface Scenario {
  seed: number;
  roots: RootSpec[];
  children: ChildSpec[];
  steps: Step[];
  rules: FaultRule[];
  /** The roots and children of the control steps, in seeds that have them. */
  control?: ControlPlan;
}

/** Which kinds make sense at a point. */
function kindsFor(point: FaultPointName): RuleKind[] {
  if (point === "after-send") return ["ambiguous", "ambiguous", "overloaded", "abort"];
  if (point === "in-alarm") return ["alarm", "alarm", "abort"];
  return ["crash", "overloaded", "abort"];
}

export function generate(seed: number): Scenario {
  const rng = new Rng(seed);
  let n = 0;
  const tag = (): string => `s${seed}-${n++}`;

  const roots: RootSpec[] = [];
  const rootCount = rng.chance(0.45) ? 2 : 1;
  for (let i = 0; i < rootCount; i++)
    roots.push({ ref: `r${i}`, backgroundMode: rng.chance(0.6) ? "continuable" : "one-shot" });

  const children: ChildSpec[] = [];
  const sends: { root: string; tag: string }[] = [];
  const newChild = (root: string, mode: ChildSpec["mode"]): ChildSpec => {
    const child = { ref: `h${children.length}`, root, mode, childId: rng.uuid(), id: "" };
    children.push(child);
    return child;
  };

  // The first rule's point cycles with the seed, so every point is covered every ten seeds; the
  // scenario is shaped so the point is reachable from that rule's scope.
  const focus = POINTS[seed % POINTS.length]!;
  const steps: Step[] = [];

  const oneStep = (): Step => {
    const root = rng.pick(roots);
    const continuables = children.filter((c) => c.mode === "continuable");
    const oneShots = children.filter((c) => c.mode === "one-shot");
    const kind = rng.weighted([
      ["send", 30],
      ["start-one-shot", 9],
      ["start-continuable", 9],
      ["followup", continuables.length > 0 ? 9 : 0],
      ["interrupt", 5],
      ["interrupt-child", continuables.length > 0 ? 3 : 0],
      ["dispose", oneShots.length > 0 ? 3 : 0],
      ["resend", sends.length > 0 ? 5 : 0],
      ["conflict", sends.length > 0 ? 2 : 0],
      ["drain", children.length > 0 ? 2 : 0],
      ["evict", 7],
      ["abort", 6],
      ["race", 5],
      ["alarm", 4],
      ["storm", 3],
      ["pause", 5],
    ] as const);
    switch (kind) {
      case "send": {
        const t = tag();
        const message = rootMessage(rng, root, t, continuables);
        sends.push({ root: root.ref, tag: t });
        return { op: "send", root: root.ref, tag: t, key: `key-${t}`, ...message };
      }
      case "start-one-shot": {
        const t = tag();
        const child = newChild(root.ref, "one-shot");
        return { op: "start-one-shot", child: child.ref, tag: t, ...oneShotPrompt(rng, t) };
      }
      case "start-continuable": {
        const t = tag();
        const child = newChild(root.ref, "continuable");
        return { op: "start-continuable", child: child.ref, tag: t, ...continuablePrompt(rng, t) };
      }
      case "followup": {
        const t = tag();
        return { op: "followup", child: rng.pick(continuables).ref, tag: t, ...followupContent(rng, t) };
      }
      case "interrupt":
        return { op: "interrupt", root: root.ref };
      case "interrupt-child":
        return { op: "interrupt-child", child: rng.pick(continuables).ref };
      case "dispose":
        return { op: "dispose", child: rng.pick(oneShots).ref };
      case "resend": {
        const prior = rng.pick(sends);
        return { op: "resend", root: prior.root, of: prior.tag };
      }
      case "conflict": {
        const prior = rng.pick(sends);
        return { op: "conflict", root: prior.root, of: prior.tag };
      }
      case "drain": {
        const mine = continuables.filter((c) => c.root === root.ref);
        return mine.length > 0 && rng.chance(0.5)
          ? { op: "drain", root: root.ref, children: [rng.pick(mine).ref] }
          : { op: "drain", root: root.ref };
      }
      case "evict":
        return { op: "evict", target: pickTarget(rng, roots, children) };
      case "abort":
        return { op: "abort", target: pickTarget(rng, roots, children) };
      case "race": {
        // a message whose turn has a side effect (a relay, a start), and a crash of its session a
        // few milliseconds later: right inside the tool call, between the effect and its record
        const t = tag();
        const message = rootMessage(rng, root, t, continuables);
        sends.push({ root: root.ref, tag: t });
        return {
          op: "together",
          steps: [
            { op: "send", root: root.ref, tag: t, key: `key-${t}`, ...message },
            { op: "abort", target: root.ref, delayMs: rng.int(0, 10) },
          ],
        };
      }
      case "alarm":
        return { op: "alarm", target: pickTarget(rng, roots, children) };
      case "storm": {
        const targets = [pickTarget(rng, roots, children)];
        if (rng.chance(0.5)) targets.push(pickTarget(rng, roots, children));
        return { op: "storm", targets, count: rng.int(3, 5), gapMs: rng.int(0, 15), hard: rng.chance(0.4) };
      }
      case "pause":
        return { op: "pause", ms: rng.int(5, 60) };
    }
  };

  // An opening that makes the focus point reachable.
  const r0 = roots[0]!;
  if (focus === "in-init" || focus === "before-send" || focus === "after-send" || rng.chance(0.5)) {
    const t = tag();
    const child = newChild(r0.ref, "one-shot");
    steps.push({ op: "start-one-shot", child: child.ref, tag: t, ...oneShotPrompt(rng, t) });
  }
  if (focus === "before-apply" || rng.chance(0.4)) {
    const t = tag();
    const child = newChild(r0.ref, "continuable");
    steps.push({ op: "start-continuable", child: child.ref, tag: t, ...continuablePrompt(rng, t) });
  }

  const total = rng.int(9, 15);
  while (steps.length < total) {
    if (rng.chance(0.12)) {
      const group = [oneStep(), oneStep()];
      if (rng.chance(0.3)) group.push(oneStep());
      steps.push({ op: "together", steps: group });
    } else steps.push(oneStep());
  }

  const rules: FaultRule[] = [];
  const ruleFor = (point: FaultPointName): FaultRule => {
    const scope = scopeFor(rng, point, roots, children);
    return { scope, point, kind: rng.pick(kindsFor(point)), after: rng.int(0, 2), times: rng.int(1, 3) };
  };
  const first = { ...ruleFor(focus), after: rng.int(0, 1) };
  rules.push(first);
  // alarms only run when work is owed or one fires again: make sure an in-alarm rule is reached
  if (focus === "in-alarm") steps.splice(rng.int(0, steps.length), 0, { op: "alarm", target: first.scope });
  const extra = rng.int(3, 5);
  for (let i = 0; i < extra; i++) rules.push(ruleFor(rng.pick(POINTS)));
  // delays that reorder sends and deliveries, from a stream of their own (so the rest of each
  // seed's schedule, and the regression seeds, stay what they were)
  const reorder = new Rng(seed * 7919 + 17);
  const delays = reorder.int(0, 2);
  // storage failures: a transaction of that session throws as it commits
  const failures = reorder.int(0, 2);
  for (let i = 0; i < failures; i++) {
    rules.push({
      scope: scopeFor(reorder, "in-transaction", roots, children),
      point: "in-transaction",
      kind: "storage",
      after: reorder.int(0, 8),
      times: reorder.int(1, 2),
    });
  }
  for (let i = 0; i < delays; i++) {
    const point = reorder.pick(["before-send", "before-apply"] as const);
    rules.push({
      scope: scopeFor(reorder, point, roots, children),
      point,
      kind: "delay",
      after: reorder.int(0, 2),
      times: reorder.int(1, 4),
      ms: reorder.int(5, 60),
    });
  }

  // lost alarms, drawn after the delays (the earlier draws of this stream stay what they were)
  const losses = reorder.int(0, 1);
  for (let i = 0; i < losses; i++) {
    rules.push({
      scope: scopeFor(reorder, "in-alarm", roots, children),
      point: "in-alarm",
      kind: "lost-alarm",
      after: reorder.int(0, 1),
      times: 1,
    });
  }

  // faults in the registry object (provider lookups of starts, the directory, provider lists),
  // from a third stream of their own; installed once the roots exist
  const registry = new Rng(seed * 104729 + 3);
  const registryFaults = registry.int(0, 2);
  for (let i = 0; i < registryFaults; i++) {
    rules.push({
      scope: REGISTRY_REF,
      point: "in-registry",
      kind: registry.pick(["crash", "overloaded", "abort"] as const),
      after: registry.int(0, 6),
      times: registry.int(1, 2),
    });
  }

  // compaction: in some seeds one root (and the children that inherit its window) gets a window
  // so small that its tools alone pass the threshold: from its third turn on every step compacts
  // first; a rule crashes or aborts around the summarizing call. A fourth stream of its own.
  const compacting = new Rng(seed * 15485863 + 5);
  if (compacting.chance(0.4)) {
    const root = compacting.pick(roots);
    root.contextWindow = SMALL_CONTEXT_WINDOW;
    rules.push({
      scope: root.ref,
      point: compacting.pick(["before-compact", "after-compact"] as const),
      kind: compacting.pick(["crash", "abort"] as const),
      after: compacting.int(0, 2),
      times: compacting.int(1, 2),
    });
  }

  // approvals: in some seeds one root requires approval of the gated tool (its children inherit
  // it; only the schedule's gated calls call it), sometimes with a timeout short enough to race
  // the operations or one the drain's clock passes; messages whose script calls it, each decided
  // (or not) later, alone or racing an interrupt, a reset or the timeout. A fifth stream of its own.
  const approving = new Rng(seed * 32452843 + 11);
  if (approving.chance(0.35)) {
    const root = approving.pick(roots);
    root.requireApproval = [GATED_TOOL];
    if (approving.chance(0.4)) root.approvalTimeoutSeconds = approving.pick([1, 2, 60]);
    const calls = approving.int(1, 3);
    for (let i = 0; i < calls; i++) {
      // a tag of the campaign's shape (tables.ts counts its answers), past the main stream's
      const t = `s${seed}-${100 + i}`;
      const gated = `gated ${t}`;
      const at = approving.int(0, steps.length);
      steps.splice(at, 0, {
        op: "send",
        root: root.ref,
        tag: t,
        key: `key-${t}`,
        content: JSON.stringify({
          script: [{ call: [{ tool: GATED_TOOL, args: { text: gated } }] }, { say: `after gate ${t}` }],
        }),
        answers: [`after gate ${t}`],
        children: [],
        gated,
      });
      if (approving.chance(0.15)) continue; // left to the timeout, its turn's end or the schedule's end
      const decision = approving.chance(0.55) ? "approve" : "deny";
      const decide: Step = {
        op: "decide",
        root: root.ref,
        gated,
        decision,
        ...(decision === "deny" ? { reason: `no ${t}` } : {}),
      };
      const race = approving.weighted([
        ["alone", 5],
        ["interrupt", 2],
        ["abort", 2],
        ["evict", 1],
        ["late", 1],
      ] as const);
      const step: Step =
        race === "alone"
          ? decide
          : race === "late"
            ? { ...decide, delayMs: approving.int(200, 1500) }
            : race === "interrupt"
              ? { op: "together", steps: [decide, { op: "interrupt", root: root.ref }] }
              : race === "abort"
                ? {
                    op: "together",
                    steps: [decide, { op: "abort", target: root.ref, delayMs: approving.int(0, 10) }],
                  }
                : { op: "together", steps: [decide, { op: "evict", target: root.ref }] };
      steps.splice(approving.int(at + 1, steps.length), 0, step);
    }
  }

  // control over time: steering, deadlines, schedules and deletion (control-plan.ts), merged into
  // the schedule from a sixth stream of its own
  const control = planControl(seed, steps, rules);
  return { seed, roots, children, steps, rules, ...(control ? { control } : {}) };
}

/** A model-started child (of a root, or of an HTTP-started continuable child: a grandchild). */
function modelRef(rng: Rng, roots: readonly RootSpec[], children: readonly ChildSpec[]): string {
  const parents = [
    ...roots.map((r) => r.ref),
    ...children.filter((c) => c.mode === "continuable").map((c) => c.ref),
  ];
  return `m:${rng.chance(0.7) ? rng.pick(roots).ref : rng.pick(parents)}:${rng.int(0, 1)}`;
}

function pickTarget(rng: Rng, roots: readonly RootSpec[], children: readonly ChildSpec[]): string {
  const refs = [...roots.map((r) => r.ref), ...children.map((c) => c.ref)];
  if (rng.chance(0.25)) return modelRef(rng, roots, children);
  return rng.pick(refs);
}

/** A scope from which the point is reachable (a sender for outbox points, a one-shot child for `in-init`). */
function scopeFor(
  rng: Rng,
  point: FaultPointName,
  roots: readonly RootSpec[],
  children: readonly ChildSpec[],
): string {
  const oneShots = children.filter((c) => c.mode === "one-shot").map((c) => c.ref);
  const anyChild = children.map((c) => c.ref);
  const rootRefs = roots.map((r) => r.ref);
  const model = modelRef(rng, roots, children);
  switch (point) {
    case "in-init":
      return oneShots.length > 0 ? rng.pick(oneShots) : model;
    case "before-send":
    case "after-send":
      // children send results and notices; roots send cancels
      return anyChild.length > 0 && rng.chance(0.8) ? rng.pick(anyChild) : rng.pick([...rootRefs, model]);
    case "before-apply":
      // roots receive results, notices and reports; children receive cancels
      return rng.chance(0.75) ? rng.pick(rootRefs) : rng.pick([...anyChild, model]);
    default:
      return rng.chance(0.7) || anyChild.length === 0
        ? rng.pick([...rootRefs, ...anyChild])
        : rng.pick([...anyChild, model]);
  }
}
