import { describe, expect, it } from "vitest";
import { api, createSession, startChild } from "../../support/api";
import { allEvents, ofType, quiet } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

describe("schedule ids are unique across a tree (README 'Schedules')", () => {
  it("three children whose models make the same schedule_message call get three ids, each listed and deleted in its own child only", async () => {
    const { id: root } = await createSession();
    const prompt = script(
      { call: [toolCall("schedule_message", { message: "daily", cron: "0 8 * * *" })] },
      { say: "scheduled" },
    );
    const children: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { childId } = await startChild(root, {
        prompt,
        label: `c${i}`,
        toolFilter: { allow: ["schedule_message"] },
      });
      children.push(childId);
    }
    const ids: string[] = [];
    for (const child of children) {
      await quiet(child);
      const [created] = ofType(await allEvents(child), "schedule/created");
      expect(created!.data.by).toBe("model");
      ids.push(created!.data.scheduleId as string);
    }
    expect(new Set(ids).size).toBe(3);
    for (const [i, child] of children.entries()) {
      const listed = (await api("GET", `/v1/sessions/${child}/schedules`)).body.schedules;
      expect(listed.map((s: { scheduleId: string }) => s.scheduleId)).toEqual([ids[i]]);
    }
    // deleting the first child's schedule leaves the others' alone
    expect((await api("DELETE", `/v1/sessions/${children[0]}/schedules/${ids[0]}`)).status).toBe(204);
    expect((await api("DELETE", `/v1/sessions/${children[1]}/schedules/${ids[0]}`)).status).toBe(404);
    for (const child of children.slice(1))
      expect((await api("GET", `/v1/sessions/${child}/schedules`)).body.schedules).toHaveLength(1);
  });
});
