import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, createSession, expectError } from "../../support/api";
import { clock } from "../../support/faults";
import { allEvents, count, messagesOf, ofType, quiet, textOf, toolResults } from "../../support/logs";
import { alarmOf, evict, sqlRows, stub, tablesHash } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

const MINUTE = 60_000;

// Every time here is years ahead of the real clock: an alarm the objects arm then never fires on
// its own, only when a test runs it (test/support/faults.ts, "the frozen clock").

afterEach(() => clock.release());

function schedule(id: string, body: Record<string, unknown>) {
  return api("POST", `/v1/sessions/${id}/schedules`, { body });
}

/** The scheduled messages the session received, as (schedule id, firing time, text). */
async function firings(id: string): Promise<{ scheduleId: string; at: number; text: string }[]> {
  return ofType(await allEvents(id), "user/message")
    .filter((e) => (e.data.source as { kind: string }).kind === "schedule")
    .map((e) => {
      const source = e.data.source as { scheduleId: string; at: number };
      return { scheduleId: source.scheduleId, at: source.at, text: textOf(e.data.content) };
    });
}

/** Runs the session's alarm (as the platform would at its time) and waits until its work is done. */
async function fireAlarm(id: string): Promise<void> {
  await runDurableObjectAlarm(stub(id));
  await quiet(id);
}

describe("recurring schedules: POST, GET and DELETE /v1/sessions/:id/schedules (README 'Schedules')", () => {
  it("answers 201 with the first firing time, lists the schedule, deletes it with 204, then 404", async () => {
    clock.set(Date.parse("2030-01-15T12:00:30Z"));
    const { id } = await createSession();
    const made = await schedule(id, { cron: "*/5 * * * *", content: "tick" });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({
      scheduleId: expect.stringMatching(/^sch_/),
      next: Date.parse("2030-01-15T12:05:00Z"),
    });
    const listed = await api("GET", `/v1/sessions/${id}/schedules`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      schedules: [
        {
          scheduleId: made.body.scheduleId,
          kind: "cron",
          cron: "*/5 * * * *",
          timezone: "UTC",
          next: Date.parse("2030-01-15T12:05:00Z"),
          content: "tick",
        },
      ],
    });
    expect(await alarmOf(id)).toBe(Date.parse("2030-01-15T12:05:00Z"));
    const removed = await api("DELETE", `/v1/sessions/${id}/schedules/${made.body.scheduleId}`);
    expect(removed.status).toBe(204);
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body).toEqual({ schedules: [] });
    expectError(
      await api("DELETE", `/v1/sessions/${id}/schedules/${made.body.scheduleId}`),
      404,
      "NOT_FOUND",
    );
    const events = await allEvents(id);
    expect(ofType(events, "schedule/created").map((e) => e.data)).toEqual([
      {
        scheduleId: made.body.scheduleId,
        next: Date.parse("2030-01-15T12:05:00Z"),
        cron: "*/5 * * * *",
        timezone: "UTC",
        by: "caller",
      },
    ]);
    expect(ofType(events, "schedule/deleted").map((e) => e.data.scheduleId)).toEqual([made.body.scheduleId]);
    expect(await alarmOf(id)).toBeNull();
  });

  it("reads the cron in its time zone: 09:00 in New York is 14:00 UTC in January", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { id } = await createSession();
    const made = await schedule(id, { cron: "0 9 * * *", timezone: "America/New_York", content: "standup" });
    expect(made.body.next).toBe(Date.parse("2030-01-15T14:00:00Z"));
  });

  it("a schedule that fires every minute fires exactly once per minute across three restarts and one lost alarm, for five minutes of the clock", async () => {
    clock.set(Date.parse("2030-01-15T12:00:10Z"));
    const { id } = await createSession();
    const made = await schedule(id, { cron: "* * * * *", content: "tick" });
    const first = Date.parse("2030-01-15T12:01:00Z");
    expect(made.body.next).toBe(first);
    for (let minute = 0; minute < 5; minute++) {
      const due = first + minute * MINUTE;
      clock.set(due + 2_000);
      if (minute === 1 || minute === 2 || minute === 4) await evict(id); // restarts
      if (minute === 3) {
        // the platform loses the alarm: a request touching the object finds the owed firing
        await runInDurableObject(stub(id), (_o, state) => state.storage.deleteAlarm());
        expect(await alarmOf(id)).toBeNull();
        expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
        await expect.poll(() => alarmOf(id)).not.toBeNull();
      }
      await fireAlarm(id);
      await fireAlarm(id); // an alarm run twice delivers nothing twice
      expect((await firings(id)).map((f) => f.at)).toEqual(
        Array.from({ length: minute + 1 }, (_, i) => first + i * MINUTE),
      );
    }
    const events = await allEvents(id);
    expect(ofType(events, "turn/end").map((e) => e.data.reason)).toEqual(Array(5).fill("completed"));
    expect(ofType(events, "assistant/message").map((e) => textOf(e.data.content))).toEqual(
      Array(5).fill("echo: tick"),
    );
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules[0].next).toBe(
      first + 5 * MINUTE,
    );
  });

  it("periods missed while the object could not run are delivered once, not once each", async () => {
    clock.set(Date.parse("2030-01-15T12:00:10Z"));
    const { id } = await createSession();
    await schedule(id, { cron: "* * * * *", content: "tick" });
    clock.set(Date.parse("2030-01-15T12:10:30Z"));
    await fireAlarm(id);
    const fired = await firings(id);
    expect(fired.map((f) => f.at)).toEqual([Date.parse("2030-01-15T12:01:00Z")]);
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules[0].next).toBe(
      Date.parse("2030-01-15T12:11:00Z"),
    );
  });

  it("a firing while the previous firing's message still waits adds none: the waiting message stands for it", async () => {
    clock.set(Date.parse("2030-01-15T12:00:10Z"));
    // the session's turn waits for an approval, so what fires meanwhile waits in the inbox
    const { id } = await createSession({ requireApproval: ["echo"] });
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script({ call: [toolCall("echo", { text: "held" })] }) },
    });
    await expect
      .poll(async () => (await api("GET", `/v1/sessions/${id}/approvals`)).body.approvals)
      .toHaveLength(1);
    await schedule(id, { cron: "* * * * *", content: "tick" });
    for (const at of ["2030-01-15T12:01:01Z", "2030-01-15T12:02:01Z", "2030-01-15T12:03:01Z"]) {
      clock.set(Date.parse(at));
      await fireAlarm(id);
    }
    const inserted = ofType(await allEvents(id), "agent/inbox/inserted").filter(
      (e) => (e.data.source as { kind: string }).kind === "schedule",
    );
    expect(inserted.map((e) => (e.data.source as { at: number }).at)).toEqual([
      Date.parse("2030-01-15T12:01:00Z"),
    ]);
    const [approval] = (await api("GET", `/v1/sessions/${id}/approvals`)).body.approvals;
    await api("POST", `/v1/sessions/${id}/approvals/${approval.approvalId}`, {
      body: { decision: "approve" },
    });
    await quiet(id);
    expect((await firings(id)).map((f) => f.text)).toEqual(["tick"]);
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules[0].next).toBe(
      Date.parse("2030-01-15T12:04:00Z"),
    );
  });

  it.each([
    [{ cron: "* * * * * *", content: "x" }, /five-field/],
    [{ cron: "@daily", content: "x" }, /five-field/],
    [{ cron: "", content: "x" }, /cron/],
    [{ cron: "61 * * * *", content: "x" }, /not valid/],
    [{ cron: "0 0 30 2 *", content: "x" }, /never fires/],
    [{ cron: "* * * * *", content: "x", timezone: "Mars/Olympus_Mons" }, /IANA/],
    [{ cron: "* * * * *" }, /content/],
    [{ cron: "* * * * *", content: "x", every: "minute" }, /every/],
  ])("%j is 400 INVALID_REQUEST and changes nothing", async (body, message) => {
    const { id } = await createSession();
    const before = await tablesHash(id);
    expectError(await schedule(id, body), 400, "INVALID_REQUEST", message);
    expect(await tablesHash(id)).toBe(before);
  });

  it("at most 64 schedules and waiting messages per session: the next is 422 QUOTA_EXCEEDED", async () => {
    const { id } = await createSession();
    for (let i = 0; i < 60; i++)
      expect((await schedule(id, { cron: "0 0 * * *", content: `s${i}` })).status).toBe(201);
    for (let i = 0; i < 4; i++) {
      const later = await api("POST", `/v1/sessions/${id}/messages`, {
        body: { content: `m${i}`, notBefore: Date.now() + 3_600_000 },
      });
      expect(later.status).toBe(202);
    }
    const before = await tablesHash(id);
    expectError(await schedule(id, { cron: "0 0 * * *", content: "one more" }), 422, "QUOTA_EXCEEDED", /64/);
    expectError(
      await api("POST", `/v1/sessions/${id}/messages`, {
        body: { content: "m", notBefore: Date.now() + 3_600_000 },
      }),
      422,
      "QUOTA_EXCEEDED",
    );
    expect(await tablesHash(id)).toBe(before);
  });

  it("a child's token reads its schedules but a session's token cannot touch another's; a wrong schedule id is 404", async () => {
    const { id, token } = await createSession();
    const other = await createSession();
    expect((await schedule(id, { cron: "0 0 * * *", content: "x" })).status).toBe(201);
    expect((await api("GET", `/v1/sessions/${id}/schedules`, { token })).status).toBe(200);
    expectError(await api("GET", `/v1/sessions/${id}/schedules`, { token: other.token }), 404, "NOT_FOUND");
    expectError(
      await api("POST", `/v1/sessions/${id}/schedules`, {
        token: other.token,
        body: { cron: "0 0 * * *", content: "x" },
      }),
      404,
      "NOT_FOUND",
    );
    expectError(await api("DELETE", `/v1/sessions/${id}/schedules/not-a-schedule`), 404, "NOT_FOUND");
  });
});

describe("notBefore: a message accepted now and delivered later (README 'Schedules')", () => {
  it("answers 202 with its id at once; the message enters the inbox after its time and not before", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { id } = await createSession();
    const notBefore = Date.parse("2030-01-15T12:01:00Z");
    const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "later", notBefore } });
    expect(sent.status).toBe(202);
    expect(sent.body.messageId).toMatch(/^msg_/);
    expect(await alarmOf(id)).toBe(notBefore);
    clock.set(notBefore - 1_000);
    await fireAlarm(id);
    expect(count(await allEvents(id), "agent/inbox/inserted")).toBe(0);
    clock.set(notBefore + 500);
    await fireAlarm(id);
    const events = await allEvents(id);
    const inserted = ofType(events, "agent/inbox/inserted");
    expect(inserted.map((e) => e.data.messageId)).toEqual([sent.body.messageId]);
    expect(inserted[0]!.at).toBeGreaterThanOrEqual(notBefore);
    expect(ofType(events, "assistant/message").map((e) => textOf(e.data.content))).toEqual(["echo: later"]);
    expect(messagesOf(events, "user")).toHaveLength(1);
  });

  it("a retry with the same idempotencyKey is the same message; a time past is delivered at once", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { id } = await createSession();
    const body = {
      content: "once",
      notBefore: Date.parse("2030-01-15T13:00:00Z"),
      idempotencyKey: "later-1",
    };
    const a = await api("POST", `/v1/sessions/${id}/messages`, { body });
    const b = await api("POST", `/v1/sessions/${id}/messages`, { body });
    expect(b.body.messageId).toBe(a.body.messageId);
    expect(await sqlRows(id, "SELECT count(*) AS n FROM schedules")).toEqual([{ n: 1 }]);
    const past = await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: "now", notBefore: Date.parse("2030-01-15T11:00:00Z") },
    });
    expect(past.status).toBe(202);
    await quiet(id);
    expect(ofType(await allEvents(id), "assistant/message").map((e) => textOf(e.data.content))).toEqual([
      "echo: now",
    ]);
  });

  it("more than a year ahead, or not an integer, is 400 INVALID_REQUEST", async () => {
    const { id } = await createSession();
    for (const notBefore of [Date.now() + 400 * 24 * 3600 * 1000, 1.5, "soon", -1]) {
      expectError(
        await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "x", notBefore } }),
        400,
        "INVALID_REQUEST",
      );
    }
  });
});

describe("schedule_message: the model schedules its own follow-up (README 'Schedules')", () => {
  it("with delay_seconds: the message arrives later as a scheduled user message and starts a turn", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { id } = await createSession();
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: {
        content: script(
          { call: [toolCall("schedule_message", { message: "wake up", delay_seconds: 90 })] },
          { say: "ok" },
        ),
      },
    });
    await quiet(id);
    const [result] = toolResults(await allEvents(id));
    expect(result).toMatchObject({
      name: "schedule_message",
      text: expect.stringMatching(/^scheduled message msg_\S+ for 2030-01-15T12:01:30\.000Z$/),
      isError: false,
    });
    clock.set(Date.parse("2030-01-15T12:01:31Z"));
    await fireAlarm(id);
    const events = await allEvents(id);
    const fired = await firings(id);
    expect(fired.map((f) => f.text)).toEqual(["wake up"]);
    expect(
      ofType(events, "assistant/message")
        .map((e) => textOf(e.data.content))
        .at(-1),
    ).toBe("echo: wake up");
  });

  it("with cron: a recurring schedule listed like any other", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { id } = await createSession();
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: {
        content: script({
          call: [
            toolCall("schedule_message", { message: "daily", cron: "0 8 * * *", timezone: "Europe/Paris" }),
          ],
        }),
      },
    });
    await quiet(id);
    const listed = (await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    expect(listed).toEqual([
      expect.objectContaining({
        cron: "0 8 * * *",
        timezone: "Europe/Paris",
        next: Date.parse("2030-01-16T07:00:00Z"),
      }),
    ]);
    expect(ofType(await allEvents(id), "schedule/created")[0]!.data.by).toBe("model");
  });

  it("bad arguments are an error result and schedule nothing", async () => {
    const { id } = await createSession();
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: {
        content: script({
          call: [
            toolCall("schedule_message", { message: "x" }),
            toolCall("schedule_message", { message: "x", delay_seconds: 5, cron: "* * * * *" }),
            toolCall("schedule_message", { message: "x", cron: "nope" }),
          ],
        }),
      },
    });
    await quiet(id);
    const results = toolResults(await allEvents(id));
    expect(results.map((r) => r.isError)).toEqual([true, true, true]);
    expect(results[0]!.text).toMatch(/exactly one of delay_seconds and cron/);
    expect(results[2]!.text).toMatch(/five-field/);
    expect((await api("GET", `/v1/sessions/${id}/schedules`)).body.schedules).toEqual([]);
  });

  it("is subject to toolFilter and requireApproval like any tool", async () => {
    const filtered = await createSession({ toolFilter: { deny: ["schedule_message"] } });
    await api("POST", `/v1/sessions/${filtered.id}/messages`, {
      body: { content: script({ call: [toolCall("schedule_message", { message: "x", delay_seconds: 5 })] }) },
    });
    await quiet(filtered.id);
    const [denied] = toolResults(await allEvents(filtered.id));
    expect(denied!.isError).toBe(true);
    expect(await sqlRows(filtered.id, "SELECT name FROM sqlite_master WHERE name = 'schedules'")).toEqual([]);

    const gated = await createSession({ requireApproval: ["schedule_message"] });
    await api("POST", `/v1/sessions/${gated.id}/messages`, {
      body: { content: script({ call: [toolCall("schedule_message", { message: "x", delay_seconds: 5 })] }) },
    });
    const pending = await expect
      .poll(async () => (await api("GET", `/v1/sessions/${gated.id}/approvals`)).body.approvals)
      .toHaveLength(1);
    void pending;
    expect((await api("GET", `/v1/sessions/${gated.id}/schedules`)).body.schedules).toEqual([]);
    expect(count(await allEvents(gated.id), "schedule/created")).toBe(0);
  });
});
