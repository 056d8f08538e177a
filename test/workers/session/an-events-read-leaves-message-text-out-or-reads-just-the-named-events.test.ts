import { describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/contract/errors";
import type { Caller } from "../../../src/contract/session";
import { type EventPage, type EventTextRead, MAX_TEXT_READ_SEQS } from "../../../src/contract/session-api";
import { createSession, sendMessage } from "../../support/api";
import { allEvents, waitForTurnEnds } from "../../support/logs";
import { stub } from "../../support/objects";

/**
 * The events read's `text` option (the A2A face's reads, session-api.ts `EventTextRead`): `leave`
 * gives every event but each message's `content`, and that text's length (never more than its
 * UTF-16 length, 0 only for none); `only` gives just the named events, whole. A malformed option
 * is refused with INVALID_REQUEST.
 */

const CALLER: Caller = { kind: "admin" };

/** The session's whole log read with `text`, in one page. */
async function pageOf(id: string, text: EventTextRead): Promise<EventPage> {
  const read = (await stub(id).events(CALLER, { after: -1, limit: 500, text })) as Outcome<EventPage>;
  if (!read.ok) throw new Error(read.message);
  return read.value;
}

describe("an events read with a text option", () => {
  it("leaves the messages' text out, telling its length, or reads just the named events whole", async () => {
    const { id } = await createSession();
    await sendMessage(id, "héllo 😀");
    await waitForTurnEnds(id, 1, 60_000);
    const whole = await allEvents(id);
    const messages = whole.filter((e) => e.type === "user/message" || e.type === "assistant/message");
    expect(messages).toHaveLength(2);

    const left = await pageOf(id, { leave: true });
    expect(left.events.map((e) => e.seq)).toEqual(whole.map((e) => e.seq));
    expect(left.next).toBeNull();
    for (const event of left.events) {
      const original = whole.find((e) => e.seq === event.seq)!;
      const { content, ...rest } = original.data as { content?: { text: string }[] };
      const isMessage = messages.includes(original);
      expect(event.data).toEqual(isMessage ? rest : original.data);
      if (!isMessage) continue;
      const chars = left.textChars![event.seq]!;
      const utf16 = content!.reduce((n, b) => n + b.text.length, 0);
      expect(chars).toBeGreaterThan(0);
      expect(chars).toBeLessThanOrEqual(utf16);
    }
    expect(Object.keys(left.textChars!).map(Number)).toEqual(messages.map((e) => e.seq));

    const named = messages.map((e) => e.seq);
    expect(await pageOf(id, { only: named })).toEqual({ events: messages, next: null });
  }, 60_000);

  it("refuses a malformed text option with INVALID_REQUEST", async () => {
    const { id } = await createSession();
    const bad = [
      { leave: false },
      { only: [-1] },
      { only: [1.5] },
      { only: "1" },
      { leave: true, only: [1] },
      { only: Array.from({ length: MAX_TEXT_READ_SEQS + 1 }, (_, i) => i) },
      null,
    ];
    for (const text of bad) {
      const read = (await stub(id).events(CALLER, {
        after: -1,
        limit: 10,
        text: text as never,
      })) as Outcome<EventPage>;
      expect(read.ok ? "ok" : read.code, JSON.stringify(text)).toBe("INVALID_REQUEST");
    }
  });
});
