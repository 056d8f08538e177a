import { describe, expect, it } from "vitest";
import { api, createSession, expectError, startChild } from "../../support/api";
import { allEvents, ofType, quiet } from "../../support/logs";

/** A top-level session and a continuable child of it with one recurring schedule (made by an admin). */
async function childWithSchedule(): Promise<{
  root: { id: string; token: string };
  child: string;
  scheduleId: string;
}> {
  const root = await createSession();
  const { childId } = await startChild(root.id, { prompt: "hello" });
  await quiet(childId);
  const made = await api("POST", `/v1/sessions/${childId}/schedules`, {
    body: { cron: "0 0 * * *", content: "nightly" },
  });
  expect(made.status).toBe(201);
  return { root, child: childId, scheduleId: made.body.scheduleId };
}

describe("whoever may delete a session may list and delete its schedules (README 'Schedules')", () => {
  it("the root's token lists a child's schedule and deletes it (204); the schedule is gone and its deletion says by whom", async () => {
    const { root, child, scheduleId } = await childWithSchedule();
    const listed = await api("GET", `/v1/sessions/${child}/schedules`, { token: root.token });
    expect(listed.status).toBe(200);
    expect(listed.body.schedules.map((s: { scheduleId: string }) => s.scheduleId)).toEqual([scheduleId]);
    const removed = await api("DELETE", `/v1/sessions/${child}/schedules/${scheduleId}`, {
      token: root.token,
    });
    expect(removed.status).toBe(204);
    expect((await api("GET", `/v1/sessions/${child}/schedules`)).body).toEqual({ schedules: [] });
    expect(ofType(await allEvents(child), "schedule/deleted").map((e) => e.data)).toEqual([
      { scheduleId, reason: `deleted by the token of ${root.id}` },
    ]);
  });

  it("another tree's token neither sees nor deletes it (404), and the schedule stays", async () => {
    const { child, scheduleId } = await childWithSchedule();
    const other = await createSession();
    expectError(
      await api("GET", `/v1/sessions/${child}/schedules`, { token: other.token }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await api("DELETE", `/v1/sessions/${child}/schedules/${scheduleId}`, { token: other.token }),
      404,
      "NOT_FOUND",
    );
    expect((await api("GET", `/v1/sessions/${child}/schedules`)).body.schedules).toHaveLength(1);
  });

  it("the root's token still may not create one below it (403 UNAUTHORIZED): deleting is not acting", async () => {
    const { root, child } = await childWithSchedule();
    expectError(
      await api("POST", `/v1/sessions/${child}/schedules`, {
        token: root.token,
        body: { cron: "0 0 * * *", content: "x" },
      }),
      403,
      "UNAUTHORIZED",
    );
    expect((await api("GET", `/v1/sessions/${child}/schedules`)).body.schedules).toHaveLength(1);
  });
});
