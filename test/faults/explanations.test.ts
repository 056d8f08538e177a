import { beforeAll, describe, expect, test } from "vitest";
import { type CheckInput, check } from "./checker";
import { type Evidence, injectedFault } from "./explanations";
import { cleanForest, copy } from "./forest";
import type { Fired, Op, Reset } from "./harness";
import type { LogEvent, Snapshot } from "./snapshot";

/**
 * Every explanation the checker gives needs its cause in the history: for each excuse, a case that
 * looks like it but whose cause is missing, refused, elsewhere or at another time is `wrong`, and
 * the genuine case next to it is expected (counted under its reason). Planted into copies of a
 * clean forest's snapshot and history.
 */

let clean: CheckInput;
beforeAll(async () => {
  clean = await cleanForest();
});

const CRASH_AT_MODEL = "injected crash at before-model (fault campaign seed 0)";

interface Verdict {
  categories: string[];
  refused: Record<string, number>;
  unanswered: Record<string, number>;
}

function verdict(input: CheckInput): Verdict {
  const result = check(input);
  return {
    categories: [...new Set(result.violations.map((v) => v.category))].sort(),
    refused: result.answers.refused,
    unanswered: result.unanswered,
  };
}

let nextOp = 1000;
function op(
  kind: string,
  target: string,
  outcome: Op["outcome"],
  wall: { start: number; end: number },
  extra: Partial<Op> = {},
): Op {
  return { id: nextOp++, kind, target, start: 0, end: 0, outcome, wall, ...extra };
}

function fired(scope: string, at: number, kind: Fired["kind"] = "crash", point = "before-model"): Fired {
  return { kind, point, scope, at };
}

const idOf = (input: CheckInput, ref: string): string => input.ids.get(ref)!;
const sessionOf = (input: CheckInput, ref: string): Snapshot => input.sessions.get(idOf(input, ref))!;

/** The span of the turn answering a root's message with key `key`: its acceptance, start and end. */
function turnOf(s: Snapshot, key: string): { accepted: number; start: number; end: number; end_: LogEvent } {
  const messageId = s.inbox.find((r) => r.idempotencyKey === key)!.messageId;
  const accepted = s.events.find((e) => e.type === "agent/inbox/inserted" && e.data.messageId === messageId)!;
  const claim = s.events.find((e) => e.type === "agent/inbox/claimed" && e.data.messageId === messageId)!;
  const start = s.events.find((e) => e.type === "turn/start" && e.data.turn === claim.data.turn)!;
  const end = s.events.find((e) => e.type === "turn/end" && e.data.turn === claim.data.turn)!;
  return { accepted: accepted.at, start: start.at, end: end.at, end_: end };
}

/** A copy in which r0's turn answering "k1" ended `reason` without its answer. */
function endedOtherwise(reason: string, data: Record<string, unknown>): CheckInput & { history: Op[] } {
  const input = copy(clean);
  const r0 = sessionOf(input, "r0");
  const turn = turnOf(r0, "k1");
  turn.end_.data = { turn: turn.end_.data.turn, reason, ...data };
  r0.events = r0.events
    .filter((e) => !(e.type === "assistant/message" && JSON.stringify(e.data).includes("echo: hello s0-1")))
    .map((e, seq) => ({ ...e, seq }));
  return input;
}

describe("an explanation needs its cause", () => {
  test("an aborted turn: an interrupt acknowledged after the message was accepted, and before the turn ended", () => {
    const span = turnOf(sessionOf(clean, "r0"), "k1");
    const aborted = (...ops: Op[]): Verdict => {
      const input = endedOtherwise("aborted", { cause: "user" });
      input.history.push(...ops);
      return verdict(input);
    };
    expect(aborted().categories).toEqual(["wrong"]);
    // refused (404): it stopped nothing
    expect(
      aborted(op("interrupt", "r0", "fail", { start: span.accepted, end: span.end }, { status: 404 }))
        .categories,
    ).toEqual(["wrong"]);
    // answered before the message was accepted
    expect(
      aborted(op("interrupt", "r0", "ok", { start: span.accepted - 20, end: span.accepted - 10 })).categories,
    ).toEqual(["wrong"]);
    // sent after the turn had ended
    expect(
      aborted(op("interrupt", "r0", "ok", { start: span.end + 10, end: span.end + 20 })).categories,
    ).toEqual(["wrong"]);
    // of another session
    expect(aborted(op("interrupt", "r1", "ok", { start: span.accepted, end: span.end })).categories).toEqual([
      "wrong",
    ]);
    const genuine = aborted(op("interrupt", "r0", "ok", { start: span.accepted, end: span.end }));
    expect(genuine).toEqual({
      categories: [],
      refused: { "aborted: stopped by an acknowledged interrupt": 1 },
      unanswered: {},
    });
  });

  test("an error: a rule that fired in that turn, in that session, with the error it injected", () => {
    const span = turnOf(sessionOf(clean, "r0"), "k1");
    const failed = (error: string, ...causes: Fired[]): Verdict => {
      const input = endedOtherwise("error", { error });
      input.scenario = {
        ...input.scenario,
        rules: [{ scope: "r0", point: "before-model", kind: "crash", after: 0, times: 2 }],
      };
      return verdict({ ...input, fired: causes });
    };
    // the rule is in the schedule but never fired
    expect(failed(CRASH_AT_MODEL).categories).toEqual(["wrong"]);
    // it fired before the turn, in another session, or its error is not the one the turn ended with
    expect(failed(CRASH_AT_MODEL, fired("r0", span.start - 1)).categories).toEqual(["wrong"]);
    expect(failed(CRASH_AT_MODEL, fired("r1", span.start)).categories).toEqual(["wrong"]);
    expect(failed("SQLITE_CONSTRAINT: UNIQUE constraint failed", fired("r0", span.start)).categories).toEqual(
      ["wrong"],
    );
    expect(failed(CRASH_AT_MODEL, fired("r0", span.start))).toEqual({
      categories: [],
      refused: { "error: crash injected at before-model": 1 },
      unanswered: {},
    });
    // every attempt of a step cut short needs one fault or reset per attempt
    const spent = "the model step failed 4 times (the object restarted during each call)";
    expect(failed(spent, fired("r0", span.start, "abort")).categories).toEqual(["wrong"]);
    const four = [0, 1, 2, 3].map(() => fired("r0", span.start, "abort"));
    expect(failed(spent, ...four).refused).toEqual({
      "error: faults or resets there during every attempt of a step": 1,
    });
  });

  test("a discarded message: a drain that covers it, acknowledged after it was accepted", () => {
    const discarded = (...ops: Op[]): Verdict => {
      const input = copy(clean);
      const h1 = sessionOf(input, "h1");
      const at = h1.events.at(-1)!.at;
      const messageId = "msg_planted";
      h1.inbox.push({ ...h1.inbox[0]!, messageId, position: 99, state: "discarded" });
      h1.events.push(
        { seq: h1.events.length, type: "agent/inbox/inserted", at, data: { messageId } },
        {
          seq: h1.events.length + 1,
          type: "agent/inbox/discarded",
          at,
          data: { messageId, reason: "drained by parent" },
        },
      );
      input.history.push(
        op(
          "followup",
          "h1",
          "ok",
          { start: at - 5, end: at },
          { result: { messageId }, input: { answers: ["fu s0-9"] } },
        ),
        ...ops.map((o) => ({ ...o, wall: { start: at - 1, end: at + 1 } })),
      );
      return verdict(input);
    };
    const span = { start: 0, end: 0 };
    expect(discarded().categories).toEqual(["wrong"]);
    expect(discarded(op("drain", "r0", "fail", span, { status: 403 })).categories).toEqual(["wrong"]);
    expect(discarded(op("drain", "r1", "ok", span)).categories).toEqual(["wrong"]);
    // a selected drain of another child
    const other = { childIds: [clean.ids.get("h0")!] };
    expect(discarded(op("drain", "r0", "ok", span, { input: other })).categories).toEqual(["wrong"]);
    expect(discarded(op("drain", "r0", "ok", span)).refused).toEqual({
      "discarded: an acknowledged drain": 1,
    });
  });

  test("a request refused or cut off: a fault at it, or the refusal the contract gives in that state", () => {
    const at = Math.max(...clean.history.map((o) => o.wall?.end ?? 0)) + 100;
    const wall = { start: at, end: at + 10 };
    const asked = (request: Op, ...causes: Fired[]): Verdict => {
      const input = copy(clean);
      input.history.push(request);
      return verdict({ ...input, fired: causes });
    };
    const cutOff = op("send", "r0", "ambiguous", wall, {
      status: 500,
      code: "INTERNAL",
      input: { key: "k9", content: "hello s0-9", answers: ["echo: hello s0-9"] },
    });
    // a 500 with no fault, with one elsewhere, with one after its answer
    expect(asked(cutOff).categories).toEqual(["wrong"]);
    expect(asked(cutOff, fired("h0", at + 5, "storage", "in-transaction")).categories).toEqual(["wrong"]);
    expect(asked(cutOff, fired("r0", at + 20, "storage", "in-transaction")).categories).toEqual(["wrong"]);
    expect(asked(cutOff, fired("r0", at + 5, "storage", "in-transaction"))).toEqual({
      categories: [],
      refused: {},
      unanswered: { "cut off 500 INTERNAL: storage at in-transaction": 1 },
    });
    // 409 DRAINING with no drain of the parent in flight
    const followup = op("followup", "h1", "fail", wall, { status: 409, code: "DRAINING" });
    expect(asked(followup).categories).toEqual(["wrong"]);
    expect(asked(followup, fired("h1", at + 5, "storage", "in-transaction")).categories).toEqual([]);
    const drainBefore = op("drain", "r0", "ok", { start: at - 30, end: at - 20 });
    const input = copy(clean);
    input.history.push(drainBefore, followup);
    expect(verdict(input).categories).toEqual(["wrong"]);
    input.history.push(op("drain", "r0", "ok", { start: at + 2, end: at + 4 }));
    expect(verdict(input).unanswered).toEqual({
      "refused 409 DRAINING: a drain of the child closed admission": 1,
    });
    // an alarm handler that threw with no fault in that session
    const alarm = op("alarm", "r0", "fail", wall, { result: { outcome: "threw" } });
    expect(asked(alarm).categories).toEqual(["wrong"]);
    expect(asked(alarm, fired("r0", at + 5, "alarm", "in-alarm")).unanswered).toEqual({
      "alarm handler threw: alarm at in-alarm": 1,
    });
    // a changed body refused under a key nothing used before
    const conflict = (key: string) =>
      op("conflict", "r0", "fail", wall, { status: 422, code: "IDEMPOTENCY_KEY_REUSED", input: { key } });
    expect(asked(conflict("k9")).categories).toEqual(["wrong"]);
    expect(asked(conflict("k1")).categories).toEqual([]);
  });
});

describe("a run ended otherwise", () => {
  const ended = (damage: (input: CheckInput & { history: Op[] }) => void): Verdict => {
    const input = copy(clean);
    damage(input);
    return verdict(input);
  };
  const abortRun = (s: Snapshot, childId: string) => {
    const run = s.runs.find((r) => r.childId === childId)!;
    run.result = { output: [], stopReason: "aborted" };
    const end = s.events.find((e) => e.type === "subagent/end" && e.data.runId === run.runId)!;
    return {
      start: s.events.find((e) => e.type === "subagent/start" && e.data.runId === run.runId)!.at,
      end,
    };
  };

  test("an HTTP-started run aborted: a dispose acknowledged while it ran", () => {
    const dispose = (outcome: Op["outcome"]) => (input: CheckInput & { history: Op[] }) => {
      const span = abortRun(sessionOf(input, "r0"), idOf(input, "h0"));
      input.history.push(op("dispose", "h0", outcome, { start: span.start, end: span.end.at }));
    };
    expect(ended(() => {}).categories).toEqual([]);
    expect(ended((input) => abortRun(sessionOf(input, "r0"), idOf(input, "h0"))).categories).toEqual([
      "wrong",
    ]);
    expect(ended(dispose("fail")).categories).toEqual(["wrong"]);
    expect(ended(dispose("ok")).refused).toEqual({ "aborted: stopped by an acknowledged dispose": 1 });
  });

  test("a foreground run aborted: the parent turn that waited on it ended first", () => {
    const fg = (input: CheckInput) =>
      [...input.sessions.values()].find((s) => s.header?.label === "fg s0-5")!;
    const waitedOn = (endedFirst: boolean) => (input: CheckInput & { history: Op[] }) => {
      const r0 = sessionOf(input, "r0");
      const span = abortRun(r0, fg(input).header!.id);
      const turn = r0.runs.find((r) => r.childId === fg(input).header!.id)!.callKey!.split(":")[0];
      const parentEnd = r0.events.find((e) => e.type === "turn/end" && e.data.turn === Number(turn))!;
      parentEnd.at = endedFirst ? span.end.at - 1 : span.end.at + 1;
      // the tool result is that run's: an error
      const result = r0.events.find(
        (e) => e.type === "tool/result" && JSON.stringify(e.data.content).includes("echo: task s0-5"),
      )!;
      result.data = { ...result.data, content: [{ type: "text", text: "Error: subagent run aborted" }] };
    };
    expect(ended(waitedOn(false)).categories).toEqual(["wrong"]);
    expect(ended(waitedOn(true))).toEqual({
      categories: [],
      refused: { "aborted: stopped by the end of the parent turn that waited on it": 1 },
      unanswered: {},
    });
  });
});

describe("children a scripted model starts are in the ledger", () => {
  const textIs = (text: string) => [{ type: "text", text }];
  const damaged = (damage: (input: CheckInput) => void): string[] => {
    const input = copy(clean);
    damage(input);
    return verdict(input).categories;
  };
  /** The tool result saying `text` (tool call ids repeat from turn to turn). */
  const resultSaying = (s: Snapshot, text: string): LogEvent =>
    s.events.find((e) => e.type === "tool/result" && JSON.stringify(e.data.content).includes(text))!;
  const runOf = (input: CheckInput, description: string) => {
    const child = [...input.sessions.values()].find((s) => s.header?.label === description)!;
    const parent = input.sessions.get(child.header!.parentSession!)!;
    return { parent, run: parent.runs.find((r) => r.childId === child.header!.id)!, child };
  };

  test("a foreground call answered with another child's result, or its run with another answer", () => {
    expect(
      damaged((input) => {
        const { parent, run } = runOf(input, "fg s0-5");
        const result = resultSaying(parent, "echo: task s0-5");
        result.data = { ...result.data, content: textIs("echo: task s0-6") };
        expect(run.callKey).toBe(`4:${result.data.toolCallId}`);
      }),
    ).toEqual(["wrong"]);
    expect(
      damaged((input) => {
        const { run } = runOf(input, "fg s0-5");
        run.result = { ...run.result, output: textIs("echo: task s0-6") };
      }),
    ).toEqual(["wrong"]);
  });

  test("a background task settled with another answer; a continuable child said another text", () => {
    expect(
      damaged((input) => {
        const { run } = runOf(input, "bg s0-6");
        run.result = { ...run.result, output: textIs("echo: task s0-9") };
      }),
    ).toEqual(["wrong"]);
    expect(
      damaged((input) => {
        const { child } = runOf(input, "bg s0-4");
        const answer = child.events.find((e) => e.type === "assistant/message")!;
        answer.data = { ...answer.data, content: textIs("echo: job s0-9") };
      }),
    ).toEqual(["wrong"]);
  });

  test("a start the tool refused needs the fault it names, or the reset whose error it carries", () => {
    const refused = (text: string, causes: Fired[], resets: Reset[] = []): string[] => {
      const input = copy(clean);
      const { parent, run } = runOf(input, "fg s0-5");
      parent.runs = parent.runs.filter((r) => r !== run);
      const result = resultSaying(parent, "echo: task s0-5");
      result.data = { ...result.data, content: textIs(text) };
      return verdict({ ...input, fired: causes, resets }).categories;
    };
    const r0 = sessionOf(clean, "r0");
    const at = turnOf(r0, "k3").start;
    const crashed = "Error: injected crash at in-registry (fault campaign seed 0)";
    expect(refused(crashed, [])).toEqual(["wrong"]);
    expect(refused(crashed, [fired("registry", at, "crash", "in-registry")])).toEqual([]);
    // the registry's reset cut the start short: the reset must be in the history, during the call
    const reset = "Error: fault campaign: abort";
    expect(refused(reset, [])).toEqual(["wrong"]);
    expect(refused(reset, [], [{ scope: "registry", start: at - 20, end: at - 10 }])).toEqual(["wrong"]);
    expect(refused(reset, [], [{ scope: "registry", start: at, end: at + 1 }])).toEqual([]);
  });
});

describe("firings are matched to the outcomes they explain as a whole", () => {
  const evidence = (...firings: Fired[]): Evidence => ({
    scenario: { seed: 0, roots: [], children: [], steps: [], rules: [] },
    history: [],
    fired: firings,
    resets: [],
    ids: new Map(),
    sessions: new Map(),
    used: new Set(),
  });

  test("two turns that ended by two firings, one in the millisecond the next turn began, are both explained in order", () => {
    // turn 2 ran from 146 to 158 and failed at its first firing (157); turn 3 began at 158 and
    // failed at the second (158): both firings lie in turn 2's span
    const ev = evidence(fired("r0", 157), fired("r0", 158));
    expect(injectedFault(ev, "r0", { start: 146, end: 158 }, CRASH_AT_MODEL)).toBe(
      "crash injected at before-model",
    );
    expect(injectedFault(ev, "r0", { start: 158, end: 158 }, CRASH_AT_MODEL)).toBe(
      "crash injected at before-model",
    );
    expect(ev.used.size).toBe(2);
  });

  test("one firing still explains one outcome only", () => {
    const ev = evidence(fired("r0", 158));
    expect(injectedFault(ev, "r0", { start: 146, end: 158 }, CRASH_AT_MODEL)).toBeDefined();
    expect(injectedFault(ev, "r0", { start: 158, end: 158 }, CRASH_AT_MODEL)).toBeUndefined();
  });
});
