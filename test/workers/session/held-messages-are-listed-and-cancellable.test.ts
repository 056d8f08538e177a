import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, createSession, expectError } from "../../support/api";
import { clock } from "../../support/faults";
import { allEvents, count, ofType, quiet } from "../../support/logs";
import { alarmOf, stub, tablesHash } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

// The frozen clock (test/support/faults.ts): an alarm fires only when a test runs it.
afterEach(() => clock.release());

const NOON = Date.parse("2030-01-15T12:00:00Z");
const HOUR = 3_600_000;

function later(id: string, body: Record<string, unknown>) {
  return api("POST", `/v1/sessions/${id}/messages`, { body });
}

describe("messages held for their time are listed and cancellable (README 'Schedules')", () => {
  it('GET …/schedules lists a notBefore message as "kind": "message" beside a "cron" schedule, oldest first', async () => {
    clock.set(NOON);
    const { id } = await createSession();
    const cron = await api("POST", `/v1/sessions/${id}/schedules`, {
      body: { cron: "0 0 * * *", content: "nightly" },
    });
    const held = await later(id, { content: "in an hour", notBefore: NOON + HOUR, delivery: "next-step" });
    expect(held.status).toBe(202);
    const listed = await api("GET", `/v1/sessions/${id}/schedules`);
    expect(listed.body).toEqual({
      schedules: [
        {
          scheduleId: cron.body.scheduleId,
          kind: "cron",
          cron: "0 0 * * *",
          timezone: "UTC",
          next: Date.parse("2030-01-16T00:00:00Z"),
          content: "nightly",
        },
        {
          scheduleId: expect.stringMatching(/^sch_[0-9a-f-]{36}$/),
          kind: "message",
          next: NOON + HOUR,
          content: "in an hour",
          messageId: held.body.messageId,
          delivery: "next-step",
        },
      ],
    });
  });

  it("the model's schedule_message with a delay is listed too", async () => {
    clock.set(NOON);
    const { id } = await createSession();
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: {
        content: script({ call: [toolCall("schedule_message", { message: "wake", delay_seconds: 60 })] }),
      },
    });
    await quiet(id);
    const [entry] = (await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    expect(entry).toEqual({
      scheduleId: expect.stringMatching(/^sch_[0-9a-f]{16}$/),
      kind: "message",
      next: NOON + 60_000,
      content: "wake",
      messageId: expect.stringMatching(/^msg_/),
      delivery: "next-turn",
    });
  });

  it("DELETE …/schedules/:scheduleId cancels a held message: 204, it never enters the inbox, a second DELETE is 404", async () => {
    clock.set(NOON);
    const { id } = await createSession();
    const held = await later(id, { content: "never", notBefore: NOON + HOUR });
    const [entry] = (await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    expect(entry.messageId).toBe(held.body.messageId);
    expect((await api("DELETE", `/v1/sessions/${id}/schedules/${entry.scheduleId}`)).status).toBe(204);
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body).toEqual({ schedules: [] });
    expect(await alarmOf(id)).toBeNull();
    clock.set(NOON + 2 * HOUR);
    await runDurableObjectAlarm(stub(id));
    await quiet(id);
    const events = await allEvents(id);
    expect(count(events, "agent/inbox/inserted")).toBe(0);
    expect(count(events, "turn/start")).toBe(0);
    expect(ofType(events, "schedule/deleted").map((e) => e.data)).toEqual([
      { scheduleId: entry.scheduleId, reason: "deleted by admin" },
    ]);
    expectError(await api("DELETE", `/v1/sessions/${id}/schedules/${entry.scheduleId}`), 404, "NOT_FOUND");
  });

  it("a cancelled held message frees its place under the 64: the next one is accepted", async () => {
    clock.set(NOON);
    const { id } = await createSession();
    for (let i = 0; i < 64; i++)
      expect((await later(id, { content: `m${i}`, notBefore: NOON + HOUR })).status).toBe(202);
    const before = await tablesHash(id);
    expectError(await later(id, { content: "one more", notBefore: NOON + HOUR }), 422, "QUOTA_EXCEEDED");
    expect(await tablesHash(id)).toBe(before);
    const [first] = (await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    expect((await api("DELETE", `/v1/sessions/${id}/schedules/${first.scheduleId}`)).status).toBe(204);
    expect((await later(id, { content: "one more", notBefore: NOON + HOUR })).status).toBe(202);
  });
});
