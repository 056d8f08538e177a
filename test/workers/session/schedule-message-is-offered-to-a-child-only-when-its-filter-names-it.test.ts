import { describe, expect, it } from "vitest";
import { createSession, sendMessage, startChild, startOneShot, waitForRun } from "../../support/api";
import { allEvents, quiet, toolResults } from "../../support/logs";
import { sqlRows } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

const SCHEDULE = script(
  { call: [toolCall("schedule_message", { message: "later", delay_seconds: 3600 })] },
  { say: "done" },
);

/** The answer the child's `schedule_message` call got, and how many schedule rows the child holds. */
async function attempt(child: string): Promise<{ isError: boolean; text: string; rows: number }> {
  await quiet(child);
  const [result] = toolResults(await allEvents(child));
  const table = await sqlRows(child, "SELECT name FROM sqlite_master WHERE name = 'schedules'");
  const rows =
    table.length === 0 ? 0 : Number((await sqlRows(child, "SELECT count(*) AS n FROM schedules"))[0]!.n);
  return { isError: result!.isError, text: result!.text, rows };
}

/** Starts a one-shot child with this tool filter that calls `schedule_message`; waits for its run. */
async function oneShotWith(toolFilter?: Record<string, unknown>): Promise<string> {
  const { id: parent } = await createSession();
  const run = await startOneShot(parent, { prompt: SCHEDULE, ...(toolFilter ? { toolFilter } : {}) });
  await waitForRun(parent, run.runId);
  return run.id;
}

describe("schedule_message is offered to a child only when its tool filter names it (README 'Schedules')", () => {
  it.each([
    ["no tool filter", undefined],
    ["a filter that only denies", { deny: ["echo"] }],
  ])(
    "a one-shot child with %s is not offered it: the call is an unknown tool and nothing is scheduled",
    async (_, filter) => {
      const child = await oneShotWith(filter);
      expect(await attempt(child)).toEqual({
        isError: true,
        text: 'Error: unknown tool "schedule_message"',
        rows: 0,
      });
    },
  );

  it("a continuable child without a tool filter is not offered it either", async () => {
    const { id: parent } = await createSession();
    const { childId } = await startChild(parent, { prompt: SCHEDULE });
    expect(await attempt(childId)).toMatchObject({ isError: true, rows: 0 });
  });

  it("a child whose filter's allow list names it schedules, as a top-level session without a filter does", async () => {
    const { id: parent } = await createSession();
    const { childId } = await startChild(parent, {
      prompt: SCHEDULE,
      toolFilter: { allow: ["schedule_message"] },
    });
    expect(await attempt(childId)).toEqual({
      isError: false,
      text: expect.stringMatching(/^scheduled message msg_/),
      rows: 1,
    });
    // a one-shot child is offered it too (what it schedules ends with its run)
    const oneShot = await oneShotWith({ allow: ["schedule_message"] });
    expect(await attempt(oneShot)).toMatchObject({ isError: false });
    const { id: root } = await createSession();
    await sendMessage(root, SCHEDULE);
    expect(await attempt(root)).toEqual({
      isError: false,
      text: expect.stringMatching(/^scheduled message msg_/),
      rows: 1,
    });
  });

  it("an allow list that names it beside a deny that names it: the deny wins", async () => {
    const child = await oneShotWith({ allow: ["schedule_message"], deny: ["schedule_message"] });
    expect(await attempt(child)).toMatchObject({ isError: true, rows: 0 });
  });
});
