import { describe, expect, test } from "vitest";
import {
  checkControl,
  checkFirings,
  checkRunDeadline,
  checkTurnEnds,
  controlRefusal,
  REPLACED_CAUSE,
  runDeadline,
  turnDeadline,
} from "./control";
import type { ControlPlan } from "./control-plan";
import type { ControlEvidence } from "./control-run";
import type { Evidence } from "./explanations";
import type { Op } from "./harness";
import type { Scenario } from "./scenario";
import type { InboxRow, LogEvent, Snapshot } from "./snapshot";

/**
 * The control ledger is not vacuous: a log of the shape the runtime writes passes, and each way
 * steering, a replacing message, a message for later, a schedule, a deadline or a deletion could
 * break its promise is planted in a fake log and caught.
 */

const C0 = "c0-id";
const D0 = "d0-id";

type Entry = { type: string; data: Record<string, unknown>; at?: number };

/** A log: seq from 0, `at` 1000 + seq unless given. */
function log(...entries: Entry[]): LogEvent[] {
  return entries.map((e, seq) => ({ seq, type: e.type, data: e.data, at: e.at ?? 1000 + seq }));
}

const text = (t: string) => [{ type: "text", text: t }];
const inserted = (messageId: string, lane = "next-turn", at?: number): Entry => ({
  type: "agent/inbox/inserted",
  data: { messageId, lane, waking: true, source: { kind: "user" } },
  ...(at === undefined ? {} : { at }),
});
const start = (turn: number, at?: number): Entry => ({
  type: "turn/start",
  data: { turn },
  ...(at === undefined ? {} : { at }),
});
const claim = (messageId: string, turn: number, content: string): Entry[] => [
  { type: "agent/inbox/claimed", data: { messageId, turn } },
  { type: "user/message", data: { messageId, content: text(content), source: { kind: "user" } } },
];
const say = (t: string): Entry => ({
  type: "assistant/message",
  data: { content: text(t), stopReason: "end" },
});
const end = (
  turn: number,
  reason = "completed",
  extra: Record<string, unknown> = {},
  at?: number,
): Entry => ({
  type: "turn/end",
  data: { turn, reason, ...extra },
  ...(at === undefined ? {} : { at }),
});

const SLOW = JSON.stringify({ script: [{ think: 300 }, { say: "slow s1-200" }] });

interface Sent {
  kind: string;
  key: string;
  content: string;
  delivery?: string;
  messageId: string;
  outcome?: Op["outcome"];
  notBefore?: number;
}

let opId = 0;
function op(kind: string, target: string, outcome: Op["outcome"], extra: Partial<Op> = {}): Op {
  return { id: ++opId, kind, target, start: 0, end: 0, outcome, wall: { start: 900, end: 905 }, ...extra };
}

function sends(list: Sent[]): { ops: Op[]; rows: InboxRow[] } {
  const ops = list.map((s) =>
    op(s.kind, "c0", s.outcome ?? "ok", {
      input: {
        key: s.key,
        content: s.content,
        delivery: s.delivery ?? "next-turn",
        ...(s.notBefore === undefined ? {} : { notBefore: s.notBefore }),
      },
      result: { messageId: s.messageId },
    }),
  );
  const rows = list.map((s, position) => ({
    messageId: s.messageId,
    position,
    lane: s.delivery === "next-step" ? "next-step" : "next-turn",
    waking: true,
    source: { kind: "user" },
    content: text(s.content),
    state: "claimed" as const,
    idempotencyKey: s.key,
  }));
  return { ops, rows };
}

const SLOW_MSG: Sent = { kind: "message", key: "k1", content: SLOW, messageId: "m1" };
const STEER: Sent = {
  kind: "steer",
  key: "k2",
  content: "steer s1-201",
  delivery: "next-step",
  messageId: "m2",
};
const STEER2: Sent = {
  kind: "steer",
  key: "k3",
  content: "steer s1-202",
  delivery: "next-step",
  messageId: "m3",
};
const NOW: Sent = {
  kind: "replace",
  key: "k4",
  content: "now s1-203",
  delivery: "interrupt",
  messageId: "m4",
};
const HELLO: Sent = { kind: "message", key: "k5", content: "hello s1-204", messageId: "m5" };

function evidence(
  events: LogEvent[],
  sent: Sent[],
  extra: { history?: Op[]; plan?: ControlPlan; sessions?: [string, Snapshot][] } = {},
): Evidence {
  const { ops, rows } = sends(sent);
  const c0: Snapshot = {
    header: { id: C0, parentSession: null },
    events,
    inbox: rows,
    runs: [],
    children: [],
  } as unknown as Snapshot;
  return {
    scenario: {
      seed: 1,
      roots: [],
      children: [],
      steps: [],
      rules: [],
      control: extra.plan ?? { roots: ["c0"], children: [] },
    } as Scenario,
    history: [...ops, ...(extra.history ?? [])],
    fired: [],
    resets: [],
    ids: new Map([
      ["c0", C0],
      ["d0", D0],
    ]),
    sessions: new Map([[C0, c0], ...(extra.sessions ?? [])]),
    used: new Set(),
  };
}

function verdict(ev: Evidence, control?: ControlEvidence): string[] {
  const flagged: string[] = [];
  checkControl(ev, control, [], (category, _id, message) => flagged.push(`${category}: ${message}`));
  return flagged;
}

/** A slow turn a steer came into (read before one more step), then a plain turn. */
function steeredLog(): LogEvent[] {
  return log(
    inserted("m1"),
    start(1),
    ...claim("m1", 1, SLOW),
    inserted("m2", "next-step"),
    say("slow s1-200"),
    ...claim("m2", 1, "steer s1-201"),
    say("echo: steer s1-201"),
    end(1),
    inserted("m5"),
    start(2),
    ...claim("m5", 2, "hello s1-204"),
    say("echo: hello s1-204"),
    end(2),
  );
}

describe("the control ledger: steering and the turn queue", () => {
  test("a steer read inside the turn it came into, and the next message as its own turn, pass", () => {
    expect(verdict(evidence(steeredLog(), [SLOW_MSG, STEER, HELLO]))).toEqual([]);
  });

  test("a steer read only by the next turn although the turn it came into completed is caught", () => {
    const events = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m2", "next-step"),
      say("slow s1-200"),
      end(1),
      start(2),
      ...claim("m2", 2, "steer s1-201"),
      say("echo: steer s1-201"),
      end(2),
    );
    expect(verdict(evidence(events, [SLOW_MSG, STEER]))).toEqual([
      "wrong: steer k2: accepted during turn 1, which completed without reading it",
    ]);
  });

  test("a steer claimed as its turn completed, with no step after it, is caught", () => {
    const events = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m2", "next-step"),
      say("slow s1-200"),
      ...claim("m2", 1, "steer s1-201"),
      end(1),
    );
    expect(verdict(evidence(events, [SLOW_MSG, STEER]))).toContain(
      "wrong: steer k2: claimed in turn 1, which completed with no step after it",
    );
  });

  test("a steer claimed twice, one claimed before it was accepted, and one in the wrong lane are caught", () => {
    const twice = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m2", "next-step"),
      ...claim("m2", 1, "steer s1-201"),
      ...claim("m2", 1, "steer s1-201"),
      say("echo: steer s1-201"),
      end(1),
    );
    expect(verdict(evidence(twice, [SLOW_MSG, STEER]))).toContain(
      "duplicated: steer k2: inserted 1, claimed 2, read 2 times",
    );
    const early = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      ...claim("m2", 1, "steer s1-201"),
      inserted("m2", "next-step"),
      say("echo: steer s1-201"),
      end(1),
    );
    expect(verdict(evidence(early, [SLOW_MSG, STEER]))).toContain(
      "wrong: steer k2: claimed (seq 4) before it was accepted (seq 6)",
    );
    const lane = steeredLog().map((e) =>
      e.type === "agent/inbox/inserted" && e.data.messageId === "m2"
        ? { ...e, data: { ...e.data, lane: "next-turn" } }
        : e,
    );
    expect(verdict(evidence(lane, [SLOW_MSG, STEER, HELLO]))).toContain(
      "wrong: steer k2: inserted in lane next-turn, not next-step",
    );
  });

  test("two steers read in another order than they were accepted are caught", () => {
    const events = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m2", "next-step"),
      inserted("m3", "next-step"),
      say("slow s1-200"),
      ...claim("m3", 1, "steer s1-202"),
      ...claim("m2", 1, "steer s1-201"),
      say("echo: steer s1-201"),
      end(1),
    );
    expect(verdict(evidence(events, [SLOW_MSG, STEER, STEER2]))).toEqual([
      "wrong: steers read in the order m3, m2, accepted as m2, m3",
    ]);
  });

  test("an acknowledged steer that is absent, and a refused one that is there, are caught", () => {
    const events = log(inserted("m1"), start(1), ...claim("m1", 1, SLOW), say("slow s1-200"), end(1));
    const ev = evidence(events, [SLOW_MSG]);
    ev.history = [
      ...ev.history,
      op("steer", "c0", "ok", { input: { key: "k9", content: "steer s1-209", delivery: "next-step" } }),
    ];
    expect(verdict(ev)).toEqual(["lost: acknowledged message k9 absent"]);
    expect(verdict(evidence(steeredLog(), [SLOW_MSG, { ...STEER, outcome: "fail" }, HELLO]))).toContain(
      "unexpected: message k2: every send was refused, and it is there",
    );
  });

  test("a replacing message ends the running turn and is the next one, ahead of what was queued", () => {
    const good = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m5"),
      inserted("m4", "next-turn", 1010),
      end(1, "aborted", { cause: REPLACED_CAUSE }, 1010),
      start(2),
      ...claim("m4", 2, "now s1-203"),
      say("echo: now s1-203"),
      end(2),
      start(3),
      ...claim("m5", 3, "hello s1-204"),
      say("echo: hello s1-204"),
      end(3),
    );
    expect(verdict(evidence(good, [SLOW_MSG, HELLO, NOW]))).toEqual([]);
    // the queued message taken first
    const behind = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m5"),
      inserted("m4", "next-turn", 1010),
      end(1, "aborted", { cause: REPLACED_CAUSE }, 1010),
      start(2),
      ...claim("m5", 2, "hello s1-204"),
      say("echo: hello s1-204"),
      end(2),
      start(3),
      ...claim("m4", 3, "now s1-203"),
      say("echo: now s1-203"),
      end(3),
    );
    expect(verdict(evidence(behind, [SLOW_MSG, HELLO, NOW]))).toEqual([
      "wrong: turn 2 took m5 while m4 was ahead of it in the queue",
    ]);
    // a replacing message that left the running turn alone
    const ignored = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m4"),
      say("slow s1-200"),
      end(1),
      start(2),
      ...claim("m4", 2, "now s1-203"),
      say("echo: now s1-203"),
      end(2),
    );
    expect(verdict(evidence(ignored, [SLOW_MSG, NOW]))).toEqual([
      "wrong: replacing message m4 did not end turn 1 as it came",
    ]);
    // a turn ended as replaced with no replacing message
    const nobody = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      end(1, "aborted", { cause: REPLACED_CAUSE }),
    );
    expect(verdict(evidence(nobody, [SLOW_MSG]))).toEqual([
      'wrong: turn 1 ended "a new message replaced the turn (delivery: interrupt)" with no replacing message accepted then',
    ]);
  });

  test("a turn that completed saying what its newest message did not ask, or aborted for nothing, is caught", () => {
    const events = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      inserted("m2", "next-step"),
      say("slow s1-200"),
      ...claim("m2", 1, "steer s1-201"),
      say("slow s1-200"),
      end(1),
    );
    expect(verdict(evidence(events, [SLOW_MSG, STEER]))).toEqual([
      'wrong: turn 1 said "slow s1-200", not "echo: steer s1-201"',
    ]);
    const aborted = log(
      inserted("m1"),
      start(1),
      ...claim("m1", 1, SLOW),
      end(1, "aborted", { cause: "user" }),
    );
    expect(verdict(evidence(aborted, [SLOW_MSG]))).toEqual([
      "wrong: turn 1 ended aborted (user) unexplained",
    ]);
  });

  test("a message for later inserted before its time is caught; at or after it passes", () => {
    const later: Sent = {
      kind: "later",
      key: "k6",
      content: "later s1-205",
      messageId: "m6",
      notBefore: 5_000,
    };
    const at = (t: number) =>
      log(
        inserted("m6", "next-turn", t),
        start(1, t),
        ...claim("m6", 1, "later s1-205"),
        say("echo: later s1-205"),
        end(1),
      );
    expect(verdict(evidence(at(5_000), [later]))).toEqual([]);
    expect(verdict(evidence(at(4_000), [later]))).toEqual([
      "wrong: later k6: inserted at 4000, 1000 ms before its time",
    ]);
  });
});

describe("the control ledger: schedules", () => {
  const MIN = 60_000;
  const times = [10 * MIN, 11 * MIN, 12 * MIN, 13 * MIN];
  const firing = (at: number, insertedAt: number, seq: number, claimedAt?: number) => ({
    at,
    insertedAt,
    insertedSeq: seq,
    claimedAt: claimedAt ?? insertedAt,
  });
  function flagged(
    cron: readonly number[],
    fired: Parameters<typeof checkFirings>[3],
    deletedSeq: number | undefined,
    passedBy: number | undefined,
  ): string[] {
    const out: string[] = [];
    checkFirings(
      "c0",
      "schedule t",
      cron,
      fired,
      deletedSeq,
      passedBy,
      () => {},
      (c, _id, m) => out.push(`${c}: ${m}`),
    );
    return out;
  }

  test("each time once, in order, the missed ones together: passes", () => {
    // 10 fired on time; 11 and 12 missed while the object could not run: one firing (11) at 12:30
    const fired = [
      firing(10 * MIN, 10 * MIN, 1),
      firing(11 * MIN, 12.5 * MIN, 5),
      firing(13 * MIN, 13 * MIN, 9),
    ];
    expect(flagged(times, fired, undefined, 20 * MIN)).toEqual([]);
  });

  test("a time twice, early, off the cron, after the deletion, or out of order is caught", () => {
    expect(
      flagged(times, [firing(10 * MIN, 10 * MIN, 1), firing(10 * MIN, 10 * MIN, 2)], undefined, undefined),
    ).toContain("duplicated: schedule t: firing time 600000 delivered twice");
    expect(flagged(times, [firing(10 * MIN, 10 * MIN - 5, 1)], undefined, undefined)).toEqual([
      "wrong: schedule t: the firing of 600000 came 5 ms early",
    ]);
    expect(
      flagged(
        times,
        [firing(10 * MIN, 10 * MIN, 1), firing(11.5 * MIN, 11.5 * MIN, 2)],
        undefined,
        undefined,
      ),
    ).toEqual(["unexpected: schedule t: a firing at 690000, no time of its cron"]);
    expect(flagged(times, [firing(10 * MIN, 10 * MIN, 5)], 3, undefined)).toEqual([
      "unexpected: schedule t: a firing (600000) after the schedule was deleted",
    ]);
    expect(flagged(times, [firing(11 * MIN, 11 * MIN, 1)], undefined, undefined)).toEqual([
      "lost: schedule t: its first firing is 660000, not 600000",
    ]);
    expect(
      flagged(
        times,
        [firing(10 * MIN, 10 * MIN, 1), firing(12 * MIN, 12 * MIN, 2), firing(11 * MIN, 12 * MIN, 3)],
        undefined,
        undefined,
      ),
    ).toContain("wrong: schedule t: firing 660000 after 720000");
  });

  test("missed periods delivered once each are caught", () => {
    // the object came back at 12:30: 11 and 12 both delivered then
    const fired = [
      firing(10 * MIN, 10 * MIN, 1),
      firing(11 * MIN, 12.5 * MIN, 2),
      firing(12 * MIN, 12.5 * MIN, 3),
    ];
    expect(flagged(times, fired, undefined, undefined)).toEqual([
      "duplicated: schedule t: a missed period (720000) delivered after the firing at 750000 already stood for it",
    ]);
  });

  test("a time that passed while the schedule lived, never fired nor stood for, is lost", () => {
    const fired = [firing(10 * MIN, 10 * MIN, 1, 10 * MIN)];
    expect(flagged(times, fired, undefined, 12.5 * MIN)).toEqual([
      "lost: schedule t: the times 660000, 720000 passed and none fired",
    ]);
    expect(flagged(times, [], undefined, 10.5 * MIN)).toEqual([
      "lost: schedule t: the times 600000 passed and none fired",
    ]);
    // its first message still waited (a long turn ran) until after 12: it stood for 11 and 12
    expect(flagged(times, [firing(10 * MIN, 10 * MIN, 1, 12.2 * MIN)], undefined, 12.5 * MIN)).toEqual([]);
  });
});

describe("the control ledger: deadlines", () => {
  const ev = evidence([], []);
  const run = { parentId: C0, childId: "k0-id", runId: "run-1", ref: "k0" };
  const judge = (result: Parameters<typeof checkRunDeadline>[2], span: { start: number; end: number }) => {
    const out: string[] = [];
    checkRunDeadline(
      ev,
      run,
      result,
      2,
      span,
      ["late s1-206"],
      () => {},
      (c, _id, m) => out.push(`${c}: ${m}`),
    );
    return out;
  };

  test("a run ended by its deadline, no earlier, saying so exactly, or completed with its answer, passes", () => {
    expect(
      judge({ output: [], stopReason: "aborted", diagnostic: runDeadline(2) }, { start: 0, end: 2_000 }),
    ).toEqual([]);
    expect(judge({ output: text("late s1-206"), stopReason: "completed" }, { start: 0, end: 500 })).toEqual(
      [],
    );
  });

  test("an early deadline, another diagnostic, a wrong answer or an unexplained abort is caught", () => {
    expect(
      judge({ output: [], stopReason: "aborted", diagnostic: runDeadline(2) }, { start: 0, end: 1_500 }),
    ).toEqual(["wrong: run of k0 ended by its deadline 1500 ms after it was sent"]);
    expect(
      judge({ output: [], stopReason: "aborted", diagnostic: runDeadline(1) }, { start: 0, end: 3_000 }),
    ).toEqual([`wrong: run of k0 ended "${runDeadline(1)}", not "${runDeadline(2)}"`]);
    expect(judge({ output: text("other"), stopReason: "completed" }, { start: 0, end: 500 })).toEqual([
      'wrong: run of k0 completed with "other"',
    ]);
    expect(
      judge(
        { output: [], stopReason: "aborted", diagnostic: "the child was deleted" },
        { start: 0, end: 3_000 },
      ),
    ).toEqual(["wrong: run of k0 ended aborted (the child was deleted) unexplained"]);
  });

  test("a continuable child's turn ended by its deadline early, or naming another, is caught", () => {
    const turn = (cause: string, endAt: number) =>
      log(
        inserted("m1", "next-turn", 0),
        start(1, 0),
        ...claim("m1", 1, SLOW),
        end(1, "aborted", { cause }, endAt),
      );
    const judgeTurn = (events: LogEvent[]) => {
      const out: string[] = [];
      checkTurnEnds(
        ev,
        "k1-id",
        events,
        new Set(),
        turnDeadline(1),
        () => {},
        (c, _id, m) => out.push(`${c}: ${m}`),
        1_000,
      );
      return out;
    };
    expect(judgeTurn(turn(turnDeadline(1), 1_000))).toEqual([]);
    expect(judgeTurn(turn(turnDeadline(1), 400))).toEqual([
      "wrong: turn 1 ended by its deadline after 400 ms (deadline 1000 ms)",
    ]);
    expect(judgeTurn(turn(turnDeadline(2), 3_000))).toEqual([
      `wrong: turn 1 ended "${turnDeadline(2)}", not "${turnDeadline(1)}"`,
    ]);
  });
});

describe("the control ledger: a deleted tree", () => {
  const plan: ControlPlan = {
    roots: ["d0"],
    children: [{ ref: "k0", parent: "d0", mode: "continuable", childId: "k0-reserved", id: "k0-id" }],
  };
  const deleted = op("delete", "d0", "ok", { status: 202, start: 2_000, end: 2_010 });
  const probe = (statuses: number[]) =>
    op("probe-deleted", "d0", "ok", { result: { statuses: { d0: statuses, k0: statuses } } });
  const erased = (): [string, Snapshot][] => [
    [D0, { header: null, events: [] } as unknown as Snapshot],
    ["k0-id", { header: null, events: [] } as unknown as Snapshot],
  ];
  const gone: ControlEvidence = {
    routes: { d0: Array(11).fill(404), k0: Array(11).fill(404) },
    remains: { d0: { tables: {}, alarm: null }, k0: { tables: {}, alarm: null } },
    listed: false,
  };
  const judge = (history: Op[], sessions: [string, Snapshot][], control: ControlEvidence) => {
    const ev = evidence([], [], { plan, history, sessions });
    ev.sessions = new Map(sessions);
    return verdict(ev, control);
  };

  test("every route 404 from the answer on, nothing kept, the directory forgot it: passes", () => {
    expect(judge([deleted, probe(Array(11).fill(404))], erased(), gone)).toEqual([]);
  });

  test("a route answered, a row or an alarm kept, a session of the tree left, or the directory still listing it is caught", () => {
    expect(judge([deleted, probe([404, 200])], erased(), gone)).toContain(
      "wrong: d0 answered 404,200 right after its tree's deletion was accepted",
    );
    expect(judge([deleted], erased(), { ...gone, routes: { ...gone.routes, k0: [200] } })).toEqual([
      "wrong: k0 answers 200 after its tree was deleted",
    ]);
    expect(
      judge([deleted], erased(), {
        ...gone,
        remains: { d0: { tables: { events: 3 }, alarm: null }, k0: { tables: {}, alarm: 5 } },
      }),
    ).toEqual(["stuck: deleted d0 keeps events (3 rows)", "stuck: deleted k0 keeps an alarm at 5"]);
    const left: [string, Snapshot][] = [
      [D0, { header: null, events: [] } as unknown as Snapshot],
      [
        "gc-id",
        {
          header: { id: "gc-id", parentSession: "k0-id", lineage: [D0, "k0-id"] },
          events: [],
        } as unknown as Snapshot,
      ],
    ];
    expect(judge([deleted], left, gone)).toEqual([
      "stuck: a session of the deleted tree of d0 is still there",
    ]);
    expect(judge([deleted], erased(), { ...gone, listed: true })).toEqual([
      "wrong: the directory still lists the deleted root",
    ]);
  });

  test("a message acknowledged after the deletion is caught; a 404 while it was under way is the contract's", () => {
    const late = op("message", "d0", "ok", { start: 2_020, end: 2_030, input: { key: "x" } });
    expect(judge([deleted, late], erased(), gone)).toContain(
      `unexpected: message #${late.id} acknowledged after the tree's deletion`,
    );
    const refused = op("steer", "d0", "fail", { status: 404, start: 2_005, end: 2_012 });
    const ev = evidence([], [], { plan, history: [deleted, refused] });
    expect(controlRefusal(ev, refused)).toBe("its tree was being deleted");
    const before = op("steer", "d0", "fail", { status: 404, start: 1_000, end: 1_010 });
    expect(controlRefusal(evidence([], [], { plan, history: [deleted, before] }), before)).toBeUndefined();
    // a follow-up to a child whose start was cut off is refused as unknown; after an acknowledged start it is not
    const cutOff = op("start-deadline", "k0", "ambiguous", { start: 100, end: 110 });
    const followup = op("followup-deadline", "k0", "fail", {
      status: 422,
      code: "NOT_RESUMABLE",
      start: 200,
      end: 210,
    });
    expect(controlRefusal(evidence([], [], { plan, history: [cutOff, followup] }), followup)).toBe(
      "its child's start was never acknowledged",
    );
    const acked = op("start-deadline", "k0", "ok", { start: 100, end: 110 });
    expect(controlRefusal(evidence([], [], { plan, history: [acked, followup] }), followup)).toBeUndefined();
  });
});
