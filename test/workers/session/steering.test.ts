import { describe, expect, it } from "vitest";
import { api, createSession, expectError, sendMessage, startChild } from "../../support/api";
import {
  allEvents,
  assistantTexts,
  count,
  eventually,
  messagesOf,
  ofType,
  sleep,
  textOf,
  turnsOf,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../support/logs";
import { LONG_TURN, script, toolCall } from "../../support/scripts";
import { sqlRows, tablesHash } from "../../support/objects";

/** Posts `content` with `delivery`; returns the answer. */
function deliver(id: string, content: unknown, delivery: string, token?: string) {
  return api("POST", `/v1/sessions/${id}/messages`, {
    body: { content, delivery },
    ...(token === undefined ? {} : { token }),
  });
}

/** Whether a turn is open at the end of `log`. */
function turnsOpen(log: readonly WireEvent[]): boolean {
  return count(log, "turn/start") !== count(log, "turn/end");
}

/** The user texts of one turn's events, in log order. */
function userTextsOf(events: readonly WireEvent[]): string[] {
  return ofType(events, "user/message").map((e) => textOf(e.data.content));
}

/** Waits until the session's first model step is under way (its turn started, nothing answered). */
async function turnRunning(id: string): Promise<void> {
  await waitForEvents(id, (es) => es.some((e) => e.type === "user/message"));
  await sleep(100);
}

describe("steering a running turn: delivery next-step (README 'Steering')", () => {
  it("a next-step message reaches the model inside the running turn, between two steps, as one user/message; the reply that would have ended the turn is followed by a step that sees it", async () => {
    const { id } = await createSession();
    await sendMessage(id, script({ think: 1_500 }, { say: "first answer" }));
    await turnRunning(id);
    const steer = await deliver(id, "turn left", "next-step");
    expect(steer.status).toBe(202);
    const events = await waitForTurnEnds(id, 1);
    const turns = turnsOf(events);
    expect(turns).toHaveLength(1);
    const turn = turns[0]!.events;
    // the steer's claim and message come after the first step's answer, before the step that reads it
    const types = turn.map((e) => e.type);
    expect(types.indexOf("agent/inbox/inserted")).toBeLessThan(types.indexOf("assistant/message"));
    expect(types.filter((t) => t !== "agent/inbox/inserted")).toEqual([
      "turn/start",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
      "turn/end",
    ]);
    expect(userTextsOf(turn)[1]).toBe("turn left");
    expect(assistantTexts(turn)).toEqual(["first answer", "echo: turn left"]);
    expect(turn.at(-1)!.data).toMatchObject({ reason: "completed" });
    const inserted = ofType(events, "agent/inbox/inserted").find(
      (e) => e.data.messageId === steer.body.messageId,
    );
    expect(inserted?.data).toMatchObject({ lane: "next-step", waking: true, source: { kind: "user" } });
  });

  it("a next-step message to an idle session starts a turn as usual", async () => {
    const { id } = await createSession();
    const sent = await deliver(id, "hello", "next-step");
    expect(sent.status).toBe(202);
    const events = await waitForTurnEnds(id, 1);
    expect(assistantTexts(events)).toEqual(["echo: hello"]);
  });

  it("steers and plain messages sent together: every steer is read inside the running turn in acceptance order; the plain ones are the next turns, in theirs", async () => {
    const { id } = await createSession();
    await sendMessage(id, script({ think: 1_500 }, { say: "busy" }));
    await turnRunning(id);
    const sent: { text: string; delivery: string }[] = [
      { text: "s1", delivery: "next-step" },
      { text: "t1", delivery: "next-turn" },
      { text: "s2", delivery: "next-step" },
      { text: "t2", delivery: "next-turn" },
      { text: "s3", delivery: "next-step" },
    ];
    const answers = await Promise.all(sent.map((m) => deliver(id, m.text, m.delivery)));
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 202]);
    const events = await waitForTurnEnds(id, 3);
    const accepted = ofType(events, "agent/inbox/inserted").map((e) => e.data.messageId);
    const order = (ids: unknown[]) => [...ids].sort((a, b) => accepted.indexOf(a) - accepted.indexOf(b));
    const steerIds = answers.filter((_, i) => sent[i]!.delivery === "next-step").map((a) => a.body.messageId);
    const turnIds = answers.filter((_, i) => sent[i]!.delivery === "next-turn").map((a) => a.body.messageId);
    const [first, second, third] = turnsOf(events);
    const messageIds = (turn: { events: WireEvent[] }) =>
      ofType(turn.events, "user/message").map((e) => e.data.messageId);
    // turn 1: its own message, then the three steers in acceptance order (one step may take several)
    expect(messageIds(first!).slice(1)).toEqual(order(steerIds));
    expect(messageIds(second!)).toEqual([order(turnIds)[0]]);
    expect(messageIds(third!)).toEqual([order(turnIds)[1]]);
    expect(count(events, "user/message")).toBe(6);
  });

  it(`at most 16 steering messages wait for the next step: the next is refused with 429 INBOX_FULL and stores nothing`, async () => {
    const { id } = await createSession();
    await sendMessage(id, LONG_TURN);
    await turnRunning(id);
    for (let i = 0; i < 16; i++) expect((await deliver(id, `s${i}`, "next-step")).status).toBe(202);
    const before = await tablesHash(id);
    const refused = await deliver(id, "one too many", "next-step");
    expectError(refused, 429, "INBOX_FULL", /16 steering messages/);
    expect(await tablesHash(id)).toBe(before);
    // a plain message is still taken
    expect((await deliver(id, "later", "next-turn")).status).toBe(202);
    await api("POST", `/v1/sessions/${id}/interrupt`);
  });

  it("a retried steer with its idempotencyKey lands once; the same key with another delivery is IDEMPOTENCY_KEY_REUSED", async () => {
    const { id } = await createSession();
    const body = { content: "steer once", delivery: "next-step", idempotencyKey: "k1" };
    const a = await api("POST", `/v1/sessions/${id}/messages`, { body });
    const b = await api("POST", `/v1/sessions/${id}/messages`, { body });
    expect(b.body.messageId).toBe(a.body.messageId);
    const other = await api("POST", `/v1/sessions/${id}/messages`, {
      body: { ...body, delivery: "interrupt" },
    });
    expectError(other, 422, "IDEMPOTENCY_KEY_REUSED");
    const events = await waitForTurnEnds(id, 1);
    expect(count(events, "agent/inbox/inserted")).toBe(1);
  });
});

describe("delivery interrupt (README 'Steering')", () => {
  it("replaces the running turn: it ends aborted saying why, the message is the next turn, and what was queued runs after it", async () => {
    const { id } = await createSession();
    await sendMessage(id, LONG_TURN);
    await turnRunning(id);
    await sendMessage(id, "queued before");
    const now = await deliver(id, "do this instead", "interrupt");
    expect(now.status).toBe(202);
    const events = await waitForTurnEnds(id, 3);
    const turns = turnsOf(events);
    expect(turns[0]!.events.at(-1)!.data).toMatchObject({
      reason: "aborted",
      cause: "a new message replaced the turn (delivery: interrupt)",
    });
    expect(turns.slice(1).map((t) => userTextsOf(t.events))).toEqual([
      ["do this instead"],
      ["queued before"],
    ]);
    expect(assistantTexts(events)).toEqual(["echo: do this instead", "echo: queued before"]);
    expect(count(events, "agent/inbox/discarded")).toBe(0);
  });

  it("to an idle session it is simply the next turn", async () => {
    const { id } = await createSession();
    const sent = await deliver(id, "first thing", "interrupt");
    expect(sent.status).toBe(202);
    const events = await waitForTurnEnds(id, 1);
    expect(events.at(-1)!.data).toMatchObject({ reason: "completed" });
    expect(assistantTexts(events)).toEqual(["echo: first thing"]);
  });
});

describe("delivery on follow-ups: the HTTP route and the model's send_message (README 'Steering')", () => {
  it("a parent's follow-up with next-step steers the continuable child's running turn", async () => {
    const { id } = await createSession();
    const { childId } = await startChild(id, { prompt: script({ think: 1_500 }, { say: "child busy" }) });
    await turnRunning(childId);
    const res = await api("POST", `/v1/sessions/${id}/subagents/${childId}/messages`, {
      body: { content: "child, turn left", delivery: "next-step" },
    });
    expect(res.status).toBe(202);
    const events = await waitForTurnEnds(childId, 1);
    const turns = turnsOf(events);
    expect(turns).toHaveLength(1);
    expect(userTextsOf(turns[0]!.events)[1]).toBe("child, turn left");
    expect(assistantTexts(events)).toEqual(["child busy", "echo: child, turn left"]);
  });

  it("the model's send_message with delivery interrupt stops the child's turn and makes the message its next turn", async () => {
    const { id } = await createSession();
    const { childId } = await startChild(id, { prompt: LONG_TURN });
    await turnRunning(childId);
    await sendMessage(
      id,
      script({
        call: [
          toolCall("send_message", { subagent_id: childId, message: "new orders", delivery: "interrupt" }),
        ],
      }),
    );
    const parent = await waitForTurnEnds(id, 1);
    const result = ofType(parent, "tool/result")[0]!;
    expect(result.data.isError).toBe(false);
    expect(textOf(result.data.content)).toBe(
      `subagent ${childId}'s current turn was stopped; this message is its next turn`,
    );
    const child = await waitForTurnEnds(childId, 2);
    const turns = turnsOf(child);
    expect(turns[0]!.events.at(-1)!.data).toMatchObject({ reason: "aborted" });
    expect(userTextsOf(turns[1]!.events)).toEqual(["new orders"]);
  });

  it("a report of a child and a user's steer that arrive during the parent's turn are both read inside it, in the order they arrived", async () => {
    const { id } = await createSession();
    // the child reports at once; the parent's turn is still thinking
    await sendMessage(
      id,
      script(
        {
          call: [
            toolCall("subagent", {
              description: "reporter",
              prompt: script({ call: [toolCall("report", { output: "progress 1" })] }, { say: "child done" }),
              run_in_background: true,
            }),
          ],
        },
        { think: 2_000 },
        { say: "parent answer" },
      ),
    );
    await eventually(
      () => allEvents(id),
      (log) =>
        log.some(
          (e) => e.type === "agent/inbox/inserted" && (e.data.source as any).kind === "subagent-report",
        ),
      { what: "the child's report in the parent's inbox" },
    );
    const steer = await deliver(id, "user steer", "next-step");
    expect(steer.status).toBe(202);
    const events = await waitForEvents(id, (es) =>
      ofType(es, "user/message").some((e) => e.data.messageId === steer.body.messageId),
    );
    const firstTurn = turnsOf(events)[0]!.events;
    const nextStep = ofType(events, "agent/inbox/inserted")
      .filter((e) => e.data.lane === "next-step")
      .map((e) => e.data.messageId);
    const claimed = ofType(firstTurn, "user/message")
      .map((e) => e.data.messageId)
      .filter((m) => nextStep.includes(m));
    expect(claimed.slice(0, 2)).toEqual(nextStep.slice(0, 2));
    expect(claimed).toContain(steer.body.messageId);
    // the child's settlement notice comes too: every lane is read in the order it was filled
    const all = await eventually(
      () => allEvents(id),
      (log) => messagesOf(log, "subagent-settled").length === 1 && !turnsOpen(log),
      { what: "the child's settlement notice read by the parent" },
    );
    for (const lane of ["next-step", "next-turn"]) {
      const inserted = ofType(all, "agent/inbox/inserted")
        .filter((e) => e.data.lane === lane)
        .map((e) => e.data.messageId);
      const read = ofType(all, "user/message")
        .map((e) => e.data.messageId)
        .filter((m) => inserted.includes(m));
      expect(read, lane).toEqual(inserted);
    }
  });
});

describe("delivery: bad input changes nothing", () => {
  it.each([
    [{ content: "x", delivery: "later" }],
    [{ content: "x", delivery: "" }],
    [{ content: "x", delivery: 1 }],
  ])("%j is 400 INVALID_REQUEST", async (body) => {
    const { id } = await createSession();
    const before = await tablesHash(id);
    expectError(await api("POST", `/v1/sessions/${id}/messages`, { body }), 400, "INVALID_REQUEST");
    expect(await tablesHash(id)).toBe(before);
    expect(await sqlRows(id, "SELECT count(*) AS n FROM inbox")).toEqual([{ n: 0 }]);
  });

  it("a follow-up's unknown delivery is 400 INVALID_REQUEST", async () => {
    const { id } = await createSession();
    const { childId } = await startChild(id, { prompt: "hi" });
    const res = await api("POST", `/v1/sessions/${id}/subagents/${childId}/messages`, {
      body: { content: "x", delivery: "soon" },
    });
    expectError(res, 400, "INVALID_REQUEST");
  });
});
