import type { FaultPointName } from "../../src/core/faults";
import { Rng } from "./prng";
import type { FaultRule, RuleKind, Step } from "./scenario";

/**
 * Control over time in the campaign (README "Steering, deadlines and schedules", "Deleting
 * sessions"), drawn from a stream of its own so every other draw of a seed stays what it was. In
 * some seeds:
 *
 *   the steering root `c0`  a root of its own (the schedule's other roots never see a steer, so
 *                           their ledgers keep one message per turn) that gets plain and slow
 *                           messages, steers (`next-step`), replacing messages (`interrupt`),
 *                           messages for later (`notBefore`), a schedule firing every minute of a
 *                           window of the test clock, ticks of that clock (its alarm then run, or
 *                           lost), children started with a deadline, while its own fault rules,
 *                           evictions and aborts race them
 *   the doomed root `d0`    a tree (a continuable child with a grandchild, a one-shot child, a
 *                           slow turn, a schedule, a message for later) deleted while faults race
 *                           the deletion (`mid-delete` among them)
 *
 * The checker of all this is control.ts; the steps run in control-run.ts.
 */

export const STEERING_ROOT = "c0";
export const DOOMED_ROOT = "d0";

/** The ledger's description of one child a control step starts over HTTP (reserved id). */
export interface ControlChild {
  ref: string;
  /** `c0` or `d0`. */
  parent: string;
  mode: "one-shot" | "continuable";
  /** The `childId` its start reserves. */
  childId: string;
  /** Its session id, once its parent exists (harness.ts `bindReserved`); empty before. */
  id: string;
  /** `deadlineSeconds` of its start (children of the steering root only). */
  deadlineSeconds?: number;
}

export interface ControlPlan {
  /** The roots it creates (`c0`, `d0`), each in some seeds. */
  roots: string[];
  children: ControlChild[];
}

/** How a control message joins the session's work (`delivery`), with `notBefore` an offset from its send. */
export type ControlAction =
  | {
      kind: "message";
      root: string;
      tag: string;
      content: string;
      delivery: "next-turn" | "next-step" | "interrupt";
      /** Milliseconds from the send to its `notBefore` (a message for later). */
      laterMs?: number;
      /** Waits this long before sending (a steer sent while the turn beside it runs). */
      delayMs?: number;
    }
  /** A schedule firing every minute of a window of `minutes` minutes, starting at the next minute. */
  | { kind: "schedule"; root: string; tag: string; minutes: number }
  /** Deletes the schedules of the one with that tag (control-run.ts, `tickOf`). */
  | { kind: "unschedule"; root: string; tag: string }
  /** The test clock moves `ms` ahead; the root's alarm runs as the platform would, or is lost. */
  | { kind: "tick"; root: string; ms: number; lose: boolean }
  | { kind: "start"; child: string; tag: string; prompt: string; answer?: string }
  | { kind: "followup"; child: string; tag: string; content: string }
  | { kind: "delete"; root: string };

/** What the scripted model answers a control message (the newest user text of a turn decides). */
export const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

/**
 * A child still working at its deadline (1 or 2 s): its think outlasts it. Short enough that a
 * think left to finish (the test clock stood still after a tick, so no deadline passed) holds
 * the drain a few seconds only.
 */
export const LONG_THINK_MS = 5_000;

/** Fault points of the steering root's own rules. */
const STEER_POINTS: readonly FaultPointName[] = [
  "before-model",
  "after-model",
  "before-append",
  "after-append",
  "before-drive",
  "in-alarm",
];

function kindAt(rng: Rng, point: FaultPointName): RuleKind {
  if (point === "in-alarm") return rng.pick(["alarm", "abort"] as const);
  return rng.pick(["crash", "abort", "overloaded"] as const);
}

/**
 * Adds the control steps (merged into `steps` in order, at places of their own stream) and their
 * fault rules; answers the plan, or undefined in a seed without control.
 */
export function planControl(seed: number, steps: Step[], rules: FaultRule[]): ControlPlan | undefined {
  const rng = new Rng(seed * 49979687 + 23);
  const steering = rng.chance(0.35);
  const doomed = rng.chance(0.22);
  if (!steering && !doomed) return undefined;
  const plan: ControlPlan = { roots: [], children: [] };
  let n = 0;
  // tags of the campaign's shape, past the main stream's and the approvals'
  const tag = (): string => `s${seed}-${200 + n++}`;
  const control = (action: ControlAction): Step => ({ op: "control", action });
  const newChild = (parent: string, mode: ControlChild["mode"], deadlineSeconds?: number): ControlChild => {
    const child: ControlChild = {
      ref: `k${plan.children.length}`,
      parent,
      mode,
      childId: rng.uuid(),
      id: "",
      ...(deadlineSeconds === undefined ? {} : { deadlineSeconds }),
    };
    plan.children.push(child);
    return child;
  };
  const mine: Step[] = [];

  if (steering) {
    const c0 = STEERING_ROOT;
    plan.roots.push(c0);
    const slow = (t: string): string => script({ think: rng.int(100, 600) }, { say: `slow ${t}` });
    const message = (
      delivery: "next-turn" | "next-step" | "interrupt",
      content: (t: string) => string,
      extra: { laterMs?: number; delayMs?: number } = {},
    ): Step => {
      const t = tag();
      return control({ kind: "message", root: c0, tag: t, content: content(t), delivery, ...extra });
    };
    const schedule = rng.chance(0.75) ? tag() : undefined;
    if (schedule) mine.push(control({ kind: "schedule", root: c0, tag: schedule, minutes: rng.int(3, 6) }));
    const count = rng.int(6, 10);
    // the test clock stands still from a tick on: children with a deadline start before any
    let ticked = false;
    for (let i = 0; i < count; i++) {
      const deadlineChildren = plan.children.filter((c) => c.parent === c0);
      const continuable = deadlineChildren.filter((c) => c.mode === "continuable");
      const what = rng.weighted([
        ["slow", 4],
        ["hello", 2],
        ["steer", 4],
        ["steer-into", 3],
        ["replace", 2],
        ["later", 3],
        ["tick", 3],
        ["reset", 2],
        ["deadline", deadlineChildren.length < 2 && !ticked ? 3 : 0],
        ["fg-deadline", ticked ? 0 : 1],
        ["followup", continuable.length > 0 ? 1 : 0],
      ] as const);
      switch (what) {
        case "slow":
          mine.push(message("next-turn", slow));
          break;
        case "hello":
          mine.push(message("next-turn", (t) => `hello ${t}`));
          break;
        case "steer": {
          const steer = message("next-step", (t) => `steer ${t}`, { delayMs: rng.int(0, 40) });
          // a steer racing a restart of the session it steers
          const race = rng.weighted([
            ["alone", 3],
            ["evict", 1],
            ["abort", 1],
          ] as const);
          mine.push(
            race === "alone"
              ? steer
              : {
                  op: "together",
                  steps: [
                    steer,
                    race === "evict"
                      ? { op: "evict", target: c0 }
                      : { op: "abort", target: c0, delayMs: rng.int(0, 20) },
                  ],
                },
          );
          break;
        }
        case "steer-into": {
          // a slow turn and steers (or a replacing message) sent while it runs
          const group: Step[] = [message("next-turn", slow)];
          const steers = rng.int(1, 3);
          for (let s = 0; s < steers; s++)
            group.push(
              rng.chance(0.8)
                ? message("next-step", (t) => `steer ${t}`, { delayMs: rng.int(10, 300) })
                : message("interrupt", (t) => `now ${t}`, { delayMs: rng.int(10, 300) }),
            );
          if (rng.chance(0.3)) group.push({ op: "abort", target: c0, delayMs: rng.int(0, 300) });
          mine.push({ op: "together", steps: group });
          break;
        }
        case "replace":
          mine.push(message("interrupt", (t) => `now ${t}`));
          break;
        case "later": {
          const delivery = rng.weighted([
            ["next-turn", 3],
            ["next-step", 1],
            ["interrupt", 1],
          ] as const);
          const laterMs = rng.chance(0.15) ? -rng.int(1_000, 5_000) : rng.int(15_000, 200_000);
          mine.push(message(delivery, (t) => `later ${t}`, { laterMs }));
          break;
        }
        case "tick":
          ticked = true;
          mine.push(
            control({ kind: "tick", root: c0, ms: rng.int(20_000, 150_000), lose: rng.chance(0.25) }),
          );
          break;
        case "reset":
          mine.push(
            rng.chance(0.5)
              ? { op: "evict", target: c0 }
              : { op: "abort", target: c0, delayMs: rng.int(0, 30) },
          );
          break;
        case "deadline": {
          const t = tag();
          const long = rng.chance(0.8);
          const child = newChild(c0, rng.chance(0.5) ? "one-shot" : "continuable", rng.int(1, 2));
          const prompt = long
            ? script({ think: LONG_THINK_MS }, { say: `late ${t}` })
            : script({ say: `quick ${t}` });
          mine.push(
            control({
              kind: "start",
              child: child.ref,
              tag: t,
              prompt,
              answer: long ? `late ${t}` : `quick ${t}`,
            }),
          );
          break;
        }
        case "fg-deadline": {
          // the model's own subagent call with deadline_seconds, in the foreground
          const t = tag();
          const content = script(
            {
              call: [
                {
                  tool: "subagent",
                  args: {
                    description: `dl ${t}`,
                    prompt: script({ think: LONG_THINK_MS }, { say: `late ${t}` }),
                    deadline_seconds: 1,
                  },
                },
              ],
            },
            { say: `fg dl ${t}` },
          );
          mine.push(control({ kind: "message", root: c0, tag: t, content, delivery: "next-turn" }));
          break;
        }
        case "followup": {
          const t = tag();
          const child = rng.pick(continuable);
          const content = rng.chance(0.5)
            ? `fu ${t}`
            : script({ think: LONG_THINK_MS }, { say: `fu late ${t}` });
          mine.push(control({ kind: "followup", child: child.ref, tag: t, content }));
          break;
        }
      }
    }
    // a schedule removed while the schedule runs (the rest are removed after the drain)
    if (schedule && rng.chance(0.35))
      mine.splice(rng.int(1, mine.length), 0, control({ kind: "unschedule", root: c0, tag: schedule }));

    for (let i = rng.int(1, 3); i > 0; i--) {
      const point = rng.pick(STEER_POINTS);
      rules.push({ scope: c0, point, kind: kindAt(rng, point), after: rng.int(0, 4), times: rng.int(1, 2) });
    }
    if (rng.chance(0.3))
      rules.push({ scope: c0, point: "in-transaction", kind: "storage", after: rng.int(0, 10), times: 1 });
    if (rng.chance(0.4))
      rules.push({ scope: c0, point: "in-alarm", kind: "lost-alarm", after: rng.int(0, 2), times: 1 });
    if (rng.chance(0.3))
      rules.push({
        scope: c0,
        point: "before-apply",
        kind: "delay",
        after: rng.int(0, 2),
        times: rng.int(1, 3),
        ms: rng.int(5, 60),
      });
    for (const child of plan.children)
      if (rng.chance(0.3))
        rules.push({
          scope: child.ref,
          point: "before-model",
          kind: rng.pick(["crash", "abort"] as const),
          after: 0,
          times: 1,
        });
  }

  if (doomed) {
    const d0 = DOOMED_ROOT;
    plan.roots.push(d0);
    const tree: Step[] = [];
    const parentT = tag();
    const parent = newChild(d0, "continuable");
    tree.push(
      control({
        kind: "start",
        child: parent.ref,
        tag: parentT,
        prompt: script(
          {
            call: [
              {
                tool: "subagent",
                args: {
                  description: `gc ${parentT}`,
                  prompt: script({ think: LONG_THINK_MS }, { say: `gc done ${parentT}` }),
                  run_in_background: true,
                },
              },
            ],
          },
          { think: rng.int(0, 2_000) },
          { say: `parent ${parentT}` },
        ),
      }),
    );
    if (rng.chance(0.6)) {
      const t = tag();
      const child = newChild(d0, "one-shot");
      tree.push(
        control({
          kind: "start",
          child: child.ref,
          tag: t,
          prompt: script({ think: LONG_THINK_MS }, { say: t }),
        }),
      );
    }
    if (rng.chance(0.5)) tree.push(control({ kind: "schedule", root: d0, tag: tag(), minutes: 3 }));
    if (rng.chance(0.5)) {
      const t = tag();
      tree.push(
        control({
          kind: "message",
          root: d0,
          tag: t,
          content: `later ${t}`,
          delivery: "next-turn",
          laterMs: 60_000,
        }),
      );
    }
    const t = tag();
    tree.push(
      control({
        kind: "message",
        root: d0,
        tag: t,
        content: script({ think: rng.int(500, 3_000) }, { say: `busy ${t}` }),
        delivery: "next-turn",
      }),
    );
    const del = control({ kind: "delete", root: d0 });
    const race = rng.weighted([
      ["alone", 3],
      ["evict", 1],
      ["abort", 2],
      ["abort-child", 1],
      ["message", 1],
      ["steer", 1],
    ] as const);
    const u = tag();
    const with_: Step | undefined =
      race === "evict"
        ? { op: "evict", target: d0 }
        : race === "abort"
          ? { op: "abort", target: d0, delayMs: rng.int(0, 10) }
          : race === "abort-child"
            ? { op: "abort", target: parent.ref, delayMs: rng.int(0, 10) }
            : race === "message"
              ? control({ kind: "message", root: d0, tag: u, content: `hello ${u}`, delivery: "next-turn" })
              : race === "steer"
                ? control({ kind: "message", root: d0, tag: u, content: `steer ${u}`, delivery: "next-step" })
                : undefined;
    if (rng.chance(0.5)) tree.push({ op: "pause", ms: rng.int(20, 400) });
    tree.push(with_ ? { op: "together", steps: [del, with_] } : del);
    mine.push(...tree);

    const members = [d0, ...plan.children.filter((c) => c.parent === d0).map((c) => c.ref)];
    if (rng.chance(0.7))
      rules.push({
        scope: rng.pick(members),
        point: "mid-delete",
        kind: rng.pick(["crash", "abort"] as const),
        after: 0,
        times: rng.int(1, 2),
      });
    if (rng.chance(0.3))
      rules.push({ scope: d0, point: "before-model", kind: "abort", after: rng.int(0, 1), times: 1 });
    if (rng.chance(0.3))
      rules.push({ scope: d0, point: "in-transaction", kind: "storage", after: rng.int(0, 6), times: 1 });
    if (rng.chance(0.3)) rules.push({ scope: d0, point: "in-alarm", kind: "lost-alarm", after: 0, times: 1 });
  }

  // merged into the schedule in order, each side keeping its own
  const merged: Step[] = [];
  let at = 0;
  for (const step of mine) {
    while (at < steps.length && rng.chance(0.5)) merged.push(steps[at++]!);
    merged.push(step);
  }
  merged.push(...steps.slice(at));
  steps.splice(0, steps.length, ...merged);
  return plan;
}
