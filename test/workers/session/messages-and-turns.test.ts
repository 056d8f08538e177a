import { describe, expect, it } from "vitest";
import { api, createSession, field, sendMessage } from "../../support/api";
import {
  allEvents,
  assistantTexts,
  count,
  ofType,
  textOf,
  turnReasons,
  turnsOf,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../support/logs";
import { sqlRows, tablesHash } from "../../support/objects";

/** The message ids of `agent/inbox/inserted` events, in log order (= acceptance order). */
function insertedIds(events: readonly WireEvent[]): string[] {
  return ofType(events, "agent/inbox/inserted").map((e) => String(e.data.messageId));
}

function expectContiguousFromZero(events: readonly WireEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
}

describe("a session answers messages through its turn driver (semantics.md §2.1)", () => {
  it("echoes a plain message in one turn with contiguous seq", async () => {
    const { id } = await createSession();
    const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "hello" } });
    expect(sent.status).toBe(202);
    expect(sent.body.messageId).toMatch(/^msg_/);
    const events = await waitForEvents(id, (es) => es.some((e) => e.type === "turn/end"));
    expect(events.map((e) => e.type)).toEqual([
      "agent/inbox/inserted",
      "turn/start",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
      "turn/end",
    ]);
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(assistantTexts(events)).toEqual(["echo: hello"]);
    expect(events[5]!.data).toEqual({ turn: 1, reason: "completed" });
  });
});

describe("the inbox answers messages in acceptance order, one turn each (semantics.md §1.3, §10.2)", () => {
  it("answers three messages sent at once in acceptance order, each in its own turn, with seq contiguous from 0", async () => {
    const { id } = await createSession();
    const contents = ["alpha", "beta", "gamma"];
    const ids = await Promise.all(contents.map((c) => sendMessage(id, c)));
    const contentOf = new Map(ids.map((messageId, i) => [messageId, contents[i]!]));
    expect(new Set(ids).size).toBe(3);

    const events = await waitForTurnEnds(id, 3);
    expectContiguousFromZero(events);

    const accepted = insertedIds(events);
    expect([...accepted].sort()).toEqual([...ids].sort());

    const turns = turnsOf(events);
    expect(turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(turnReasons(events)).toEqual(["completed", "completed", "completed"]);
    turns.forEach((turn, i) => {
      const users = ofType(turn.events, "user/message");
      expect(users).toHaveLength(1);
      // the i-th turn answers the i-th accepted message, and answers it with its own content
      expect(users[0]!.data.messageId).toBe(accepted[i]);
      const expected = contentOf.get(accepted[i]!)!;
      expect(textOf(users[0]!.data.content)).toBe(expected);
      const assistants = ofType(turn.events, "assistant/message");
      expect(assistants.map((a) => textOf(a.data.content))).toEqual([`echo: ${expected}`]);
    });

    // nothing else happens afterwards: no fourth turn, each message claimed exactly once
    const settled = await allEvents(id);
    expect(count(settled, "turn/start")).toBe(3);
    expect(count(settled, "agent/inbox/claimed")).toBe(3);
  });

  it("keeps inbox order equal to acceptance order for 20 concurrent sends, with one turn open at a time", async () => {
    const { id } = await createSession();
    const contents = Array.from({ length: 20 }, (_, i) => `message ${i}`);
    const ids = await Promise.all(contents.map((c) => sendMessage(id, c)));
    expect(new Set(ids).size).toBe(20);

    const events = await waitForTurnEnds(id, 20, 15_000);
    expectContiguousFromZero(events);
    const accepted = insertedIds(events);
    expect([...accepted].sort()).toEqual([...ids].sort());

    // the inbox's FIFO positions follow acceptance order, and every row was claimed
    const rows = await sqlRows<{ message_id: string; position: number; state: string }>(
      id,
      "SELECT message_id, position, state FROM inbox ORDER BY position",
    );
    expect(rows.map((r) => r.message_id)).toEqual(accepted);
    expect(rows.map((r) => r.state)).toEqual(accepted.map(() => "claimed"));
    const positions = rows.map((r) => r.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(20);

    // claims and answers follow the same order; turns never overlap (turnsOf throws otherwise)
    const claimed = ofType(events, "agent/inbox/claimed").map((e) => String(e.data.messageId));
    expect(claimed).toEqual(accepted);
    const turns = turnsOf(events);
    expect(turns).toHaveLength(20);
    expect(turns.map((t) => count(t.events, "user/message"))).toEqual(turns.map(() => 1));
    expect(turns.map((t) => ofType(t.events, "user/message")[0]!.data.messageId)).toEqual(accepted);
    expect(turnReasons(events)).toEqual(turns.map(() => "completed"));
  });

  it("returns the same messageId for a repeated idempotencyKey and stores one inbox row and one inserted event", async () => {
    const { id } = await createSession();
    const key = `key-${crypto.randomUUID()}`;
    // concurrent duplicates and a later retry all map to the first acceptance
    const first = await Promise.all([1, 2, 3].map(() => sendMessage(id, "once", { idempotencyKey: key })));
    expect(new Set(first).size).toBe(1);
    await waitForTurnEnds(id, 1);
    const retry = await sendMessage(id, "once", { idempotencyKey: key });
    expect(retry).toBe(first[0]);

    const rows = await sqlRows<{ message_id: string }>(
      id,
      "SELECT message_id FROM inbox WHERE idempotency_key = ?",
      key,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.message_id).toBe(first[0]);
    expect(await sqlRows(id, "SELECT message_id FROM inbox")).toHaveLength(1);
    const inserted = await sqlRows<{ data: string }>(
      id,
      "SELECT data FROM events WHERE type = 'agent/inbox/inserted'",
    );
    expect(inserted).toHaveLength(1);
    expect(field(JSON.parse(inserted[0]!.data), "messageId")).toBe(first[0]);

    // the message was answered once, and the replay did not start another turn
    const events = await allEvents(id);
    expect(count(events, "turn/start")).toBe(1);
    expect(count(events, "user/message")).toBe(1);
  });

  it("answers 422 IDEMPOTENCY_KEY_REUSED for the same key with different content and stores nothing", async () => {
    const { id } = await createSession();
    const key = `key-${crypto.randomUUID()}`;
    const original = await sendMessage(id, "original", { idempotencyKey: key });
    await waitForTurnEnds(id, 1);
    const before = await tablesHash(id);

    for (const content of [
      "different",
      [{ type: "text", text: "different" }],
      [{ type: "text", text: "original!" }],
    ]) {
      const res = await api("POST", `/v1/sessions/${id}/messages`, {
        body: { content, idempotencyKey: key },
      });
      expect(res.status).toBe(422);
      expect(field(res.body, "error", "code")).toBe("IDEMPOTENCY_KEY_REUSED");
      expect(typeof field(res.body, "error", "message")).toBe("string");
    }

    expect(await tablesHash(id)).toBe(before);
    const events = await allEvents(id);
    expect(insertedIds(events)).toEqual([original]);
    expect(count(events, "turn/start")).toBe(1);
  });
});
