import { describe, expect, it } from "vitest";
import { api, createSession } from "../../../support/api";
import { ofType, waitForEvents } from "../../../support/logs";
import { connectMcpFace } from "../../../support/mcp-face";
import { tablesHash } from "../../../support/objects";
import { script, toolCall } from "../../../support/scripts";

/**
 * Bad arguments of `decide_approval` on the MCP face (MCP_FACE_DECISIONS on, this project): each
 * is refused with an error result that names what is wrong, and changes nothing: the session's
 * tables hash the same before and after, and the approval waiting in it stays pending.
 */

const ECHO_THEN_DONE = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

describe("decide_approval's bad arguments", () => {
  it("refuses each, naming the fault, and changes nothing", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    expect(
      (await api("POST", `/v1/sessions/${id}/messages`, { body: { content: ECHO_THEN_DONE } })).status,
    ).toBe(202);
    const log = await waitForEvents(id, (es) => ofType(es, "approval/requested").length === 1);
    const { approvalId } = ofType(log, "approval/requested")[0]!.data as { approvalId: string };
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["an empty approval_id", { approval_id: "", decision: "approve" }, /approval_id/],
      [
        "an approval_id past 128 characters",
        { approval_id: "a".repeat(129), decision: "approve" },
        /approval_id/,
      ],
      ["an approval_id of no approval", { approval_id: UNKNOWN, decision: "approve" }, /^NOT_FOUND: /],
      ["an approval_id that is not a string", { approval_id: 7, decision: "approve" }, /approval_id/],
      ["a decision outside approve and deny", { approval_id: approvalId, decision: "maybe" }, /decision/],
      ["a decision in upper case", { approval_id: approvalId, decision: "APPROVE" }, /decision/],
      ["no decision", { approval_id: approvalId }, /decision/],
      [
        "a reason past 2,000 characters",
        { approval_id: approvalId, decision: "deny", reason: "r".repeat(2001) },
        /reason/,
      ],
    ];
    const face = await connectMcpFace(id, token);
    const before = await tablesHash(id);
    for (const [name, args, names] of cases) {
      const answer = await face
        .callTool({ name: "decide_approval", arguments: args })
        .catch((error: Error) => ({
          isError: true,
          content: [{ type: "text", text: error.message }],
        }));
      expect(answer.isError, name).toBe(true);
      expect(textOf(answer), name).toMatch(names);
      expect(await tablesHash(id), name).toBe(before);
    }
    const pending = (await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals;
    expect(pending.map((a: { approvalId: string }) => a.approvalId)).toEqual([approvalId]);
    await face.close();
  }, 45_000);
});
