import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage } from "../../support/api";
import { allEvents, waitForTurnEnds } from "../../support/logs";

/**
 * `GET …/events` cuts a page at 4 MiB of event data past its first event, whatever `limit` asks:
 * 500 rows of up to 512 KiB each would not fit an object's 128 MB. `next` goes on from where the
 * page was cut, so walking the pages still yields every event once, in order.
 */

const PAGE_BYTES = 4 * 1024 * 1024;

describe("a page of a session's events", () => {
  it("stops at 4 MiB of data however many events limit asks for, and the pages still hold every event once, in order", async () => {
    const { id } = await createSession();
    const big = "x".repeat(200 * 1024);
    for (let i = 0; i < 14; i++) await sendMessage(id, `${i}${big}`);
    await waitForTurnEnds(id, 14, 60_000);

    const first = await api("GET", `/v1/sessions/${id}/events?limit=500`);
    expect(first.status).toBe(200);
    const sizes = first.body.events.map((e: { data: unknown }) => JSON.stringify(e.data).length);
    expect(first.body.next).toBe(first.body.events.at(-1).seq);
    // past its first event, a page holds no more than the budget
    expect(sizes.slice(1).reduce((a: number, b: number) => a + b, 0)).toBeLessThanOrEqual(PAGE_BYTES);
    // the budget, not the limit, cut it: one more event would have passed it
    expect(sizes.reduce((a: number, b: number) => a + b, 0)).toBeGreaterThan(PAGE_BYTES / 2);

    const walked = await allEvents(id);
    expect(walked.map((e) => e.seq)).toEqual(walked.map((_, i) => i));
    expect(walked.filter((e) => e.type === "assistant/message")).toHaveLength(14);
  }, 120_000);
});
