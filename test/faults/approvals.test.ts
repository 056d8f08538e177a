import { describe, expect, test } from "vitest";
import { alreadyDecided, checkApprovals } from "./approvals";
import type { Evidence } from "./explanations";
import type { Op } from "./harness";
import type { Scenario } from "./scenario";
import type { LogEvent, Snapshot } from "./snapshot";

/**
 * The approvals ledger is not vacuous: a gated call held to its decision passes, and each way a
 * call could break its decision (run twice, run when denied, run with no decision, a 200 the log
 * contradicts, a deny no cause explains) is caught. Built on a one-session log of the shape the
 * runtime writes.
 */

const ROOT = "root-id";
const GATED = "gated s1-100";
const APPROVAL = "approval-1";

function events(...tail: { type: string; data: Record<string, unknown>; at?: number }[]): LogEvent[] {
  const head = [
    { type: "turn/start", data: { turn: 1 } },
    { type: "agent/inbox/claimed", data: { messageId: "m1", turn: 1 } },
    {
      type: "assistant/message",
      data: { content: [], toolCalls: [{ id: "c1", name: "echo", args: { text: GATED } }] },
    },
    {
      type: "approval/requested",
      data: {
        approvalId: APPROVAL,
        sessionId: ROOT,
        toolCallId: "c1",
        tool: "echo",
        args: { text: GATED },
        requestedAt: 100,
      },
    },
  ];
  return [...head, ...tail].map((e, seq) => ({ seq, type: e.type, data: e.data, at: 100 + seq }));
}

const decided = (decision: string, reason?: string) => ({
  type: "approval/decided",
  data: { approvalId: APPROVAL, decision, ...(reason ? { reason } : {}), by: ROOT },
});
const result = (text: string, isError = false) => ({
  type: "tool/result",
  data: { toolCallId: "c1", name: "echo", isError, content: [{ type: "text", text }] },
});
const end = (reason: string, extra: Record<string, unknown> = {}) => ({
  type: "turn/end",
  data: { turn: 1, reason, ...extra },
});

let opId = 0;
function op(
  kind: string,
  outcome: Op["outcome"],
  input: Record<string, unknown>,
  extra: Partial<Op> = {},
): Op {
  return {
    id: ++opId,
    kind,
    target: "r0",
    start: 0,
    end: 0,
    outcome,
    input,
    wall: { start: 100, end: 120 },
    ...extra,
  };
}

const send = op("send", "ok", { key: "k", gated: GATED });
const decision = (kind: string, outcome: Op["outcome"], extra: Partial<Op> = {}, reason?: string) =>
  op(
    kind,
    outcome,
    { approvalId: APPROVAL, sessionId: ROOT, toolCallId: "c1", gated: GATED, ...(reason ? { reason } : {}) },
    extra,
  );

function verdict(log: LogEvent[], history: Op[]): { categories: string[]; notes: string[] } {
  const ev: Evidence = {
    scenario: {
      seed: 1,
      roots: [{ ref: "r0", backgroundMode: "one-shot" }],
      children: [],
      steps: [],
      rules: [],
    } as Scenario,
    history,
    fired: [],
    resets: [],
    ids: new Map([["r0", ROOT]]),
    sessions: new Map([
      [ROOT, { header: { id: ROOT, parentSession: null }, events: log } as unknown as Snapshot],
    ]),
    used: new Set(),
  };
  const categories: string[] = [];
  const notes: string[] = [];
  checkApprovals(ev, notes, (category) => categories.push(category));
  return { categories: [...new Set(categories)].sort(), notes };
}

describe("the approvals ledger", () => {
  test("an approved call ran once with its text; a denied one answered `denied: <reason>`", () => {
    const approve = decision("approve", "ok");
    expect(verdict(events(decided("approve"), result(GATED), end("completed")), [send, approve])).toEqual({
      categories: [],
      notes: ["approval: approved, ran once"],
    });
    const deny = decision("deny", "ok", {}, "no");
    expect(
      verdict(events(decided("deny", "no"), result("denied: no", true), end("completed")), [send, deny])
        .categories,
    ).toEqual([]);
  });

  test("each broken decision is caught", () => {
    const approve = decision("approve", "ok");
    const deny = decision("deny", "ok", {}, "no");
    // run twice
    expect(
      verdict(events(decided("approve"), result(GATED), result(GATED), end("completed")), [send, approve])
        .categories,
    ).toContain("duplicated");
    // approved, answered with an error
    expect(
      verdict(events(decided("approve"), result("boom", true), end("completed")), [send, approve]).categories,
    ).toContain("wrong");
    // a deny acknowledged, the log keeps approve
    expect(
      verdict(events(decided("approve"), result(GATED), end("completed")), [send, deny]).categories,
    ).toEqual(["unexpected", "wrong"]);
    // denied, and it ran
    expect(
      verdict(events(decided("deny", "no"), result(GATED), end("completed")), [send, deny]).categories,
    ).toContain("wrong");
    // ran with no decision at all
    expect(verdict(events(result(GATED), end("completed")), [send]).categories).toContain("unexpected");
    // never decided
    expect(verdict(events(end("completed")), [send]).categories).toContain("lost");
    // denied by an interrupt nobody sent; then with the interrupt acknowledged in its span
    const stopped = events(end("aborted", { cause: "user" }), decided("deny", "the turn was interrupted"));
    expect(verdict(stopped, [send]).categories).toEqual(["wrong"]);
    const interrupt = op("interrupt", "ok", {}, { wall: { start: 104, end: 106 } });
    expect(verdict(stopped, [send, interrupt])).toEqual({
      categories: [],
      notes: ["approval: denied by its turn's end: stopped by an acknowledged interrupt"],
    });
    // a timeout the root does not have
    expect(
      verdict(
        events(
          decided("deny", "no decision came within 1 s"),
          result("denied: no decision came within 1 s", true),
        ),
        [send],
      ).categories,
    ).toEqual(["wrong"]);
  });

  test("a 409 is explained only by the other decision taken first by the turn's end or the timeout", () => {
    const refused = decision("approve", "fail", { status: 409, code: "ALREADY_DECIDED" });
    const ev = (log: LogEvent[]): Evidence =>
      ({
        history: [send, refused],
        sessions: new Map([[ROOT, { events: log } as unknown as Snapshot]]),
      }) as unknown as Evidence;
    expect(
      alreadyDecided(ev(events(end("aborted"), decided("deny", "the turn was interrupted"))), refused),
    ).toBe("the end of its turn denied it first");
    expect(alreadyDecided(ev(events(decided("deny", "no"))), refused)).toBeUndefined();
    expect(alreadyDecided(ev(events(decided("approve"))), refused)).toBeUndefined();
  });
});
