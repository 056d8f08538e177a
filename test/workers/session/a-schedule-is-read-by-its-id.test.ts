import { afterEach, describe, expect, it } from "vitest";
import { SubagentError, SubagentsClient } from "../../../src/client";
import { ADMIN, api, createSession, expectError, workerFetch } from "../../support/api";
import { clock } from "../../support/faults";

// The frozen clock (test/support/faults.ts): nothing fires unless a test runs the alarm.
afterEach(() => clock.release());

const NOON = Date.parse("2030-01-15T12:00:00Z");
const HOUR = 3_600_000;

const sdk = new SubagentsClient({
  baseUrl: "http://example.com",
  token: ADMIN,
  fetch: (input, init) => workerFetch(new Request(input, init)),
});

describe("GET /v1/sessions/:id/schedules/:scheduleId (README 'Schedules')", () => {
  it("answers a recurring schedule and a held message exactly as the listing shows them, over HTTP and the client", async () => {
    clock.set(NOON);
    const { id, token } = await createSession();
    const cron = await api("POST", `/v1/sessions/${id}/schedules`, {
      body: { cron: "0 0 * * *", content: "nightly", timezone: "Europe/Paris" },
    });
    await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "later", notBefore: NOON + HOUR } });
    const { schedules } = (await api("GET", `/v1/sessions/${id}/schedules`)).body;
    expect(schedules.map((s: { kind: string }) => s.kind)).toEqual(["cron", "message"]);
    for (const listed of schedules) {
      const one = await api("GET", `/v1/sessions/${id}/schedules/${listed.scheduleId}`, { token });
      expect({ status: one.status, body: one.body }).toEqual({ status: 200, body: listed });
      expect(await sdk.getSchedule(id, listed.scheduleId)).toEqual(listed);
    }
    expect(schedules[0].scheduleId).toBe(cron.body.scheduleId);
  });

  it("is 404 once the schedule is deleted, for an id it never had, and for another session's token", async () => {
    clock.set(NOON);
    const { id } = await createSession();
    const other = await createSession();
    const { scheduleId } = (
      await api("POST", `/v1/sessions/${id}/schedules`, { body: { cron: "0 0 * * *", content: "nightly" } })
    ).body;
    expectError(
      await api("GET", `/v1/sessions/${id}/schedules/${scheduleId}`, { token: other.token }),
      404,
      "NOT_FOUND",
    );
    expect((await api("DELETE", `/v1/sessions/${id}/schedules/${scheduleId}`)).status).toBe(204);
    expectError(
      await api("GET", `/v1/sessions/${id}/schedules/${scheduleId}`),
      404,
      "NOT_FOUND",
      /schedule not found/,
    );
    expectError(
      await api("GET", `/v1/sessions/${id}/schedules/sch_00000000-0000-4000-8000-000000000000`),
      404,
      "NOT_FOUND",
    );
    expectError(await api("GET", `/v1/sessions/${id}/schedules/not-a-schedule`), 404, "NOT_FOUND");
    const refused = await sdk.getSchedule(id, scheduleId).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SubagentError);
    expect((refused as SubagentError).code).toBe("NOT_FOUND");
  });
});
