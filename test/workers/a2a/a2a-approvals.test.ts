import { type Message, Role, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { asTask, connect, send, texts, userMessage } from "../../support/a2a-client";
import { createSession } from "../../support/api";
import { allEvents, ofType, toolResults, userTexts } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

/**
 * Approvals through the A2A face (README "Approvals"), with the official A2A SDK's client: a task
 * whose turn waits on an approval is `input-required`, its status message naming the pending
 * approvals in a data part; a reply whose data part is a decision decides it, and is logged as
 * `approval/decided`, never as a user message.
 */

function decision(taskId: string, body: Record<string, unknown>): Message {
  return {
    ...userMessage("", taskId),
    parts: [
      {
        content: { $case: "data", value: body },
        metadata: undefined,
        filename: "",
        mediaType: "application/json",
      },
    ],
  };
}

describe("approvals through the A2A face", () => {
  it("a task waiting on an approval is input-required with the pending list; a data-part reply decides it and the task completes", async () => {
    // a top-level session is a task: one created over HTTP with requirements is continued over A2A
    const { id } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const client = await connect();
    const waiting = asTask(
      await client.sendMessage(
        send(
          userMessage(script({ call: [toolCall("echo", { text: "from a2a" })] }, { say: "all done" }), id),
        ),
      ),
    );
    expect(waiting.id).toBe(id);
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const parts = waiting.status?.message?.parts ?? [];
    expect(waiting.status?.message?.role).toBe(Role.ROLE_AGENT);
    expect(texts(parts)).toMatch(/^Waiting for a decision on a call: echo \(/);
    const data = parts.find((p) => p.content?.$case === "data")?.content;
    const approvals = (
      data as { value: { approvals: { approvalId: string; tool: string; sessionId: string }[] } }
    ).value.approvals;
    expect(approvals).toMatchObject([{ tool: "echo", sessionId: id, args: { text: "from a2a" } }]);

    const done = asTask(
      await client.sendMessage(
        send(decision(id, { approvalId: approvals[0]!.approvalId, decision: "approve" })),
      ),
    );
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(texts(done.status?.message?.parts)).toBe("all done");
    const log = await allEvents(id);
    expect(toolResults(log)).toMatchObject([{ name: "echo", text: "from a2a", isError: false }]);
    expect(ofType(log, "approval/decided").map((e) => e.data)).toEqual([
      { approvalId: approvals[0]!.approvalId, decision: "approve", by: "admin" },
    ]);
    // the decision was not a message of the conversation
    expect(userTexts(log)).toHaveLength(1);

    // deciding again the other way is refused with the code in the error
    await expect(
      client.sendMessage(send(decision(id, { approvalId: approvals[0]!.approvalId, decision: "deny" }))),
    ).rejects.toThrow(/ALREADY_DECIDED/);
  });
});
