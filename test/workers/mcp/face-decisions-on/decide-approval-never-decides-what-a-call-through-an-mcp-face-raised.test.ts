import { describe, expect, it } from "vitest";
import { ADMIN, api, createSession } from "../../../support/api";
import { allEvents, eventually, ofType, waitForEvents, type WireEvent } from "../../../support/logs";
import { connectMcpFace } from "../../../support/mcp-face";
import { script, toolCall } from "../../../support/scripts";

/**
 * No caller decides an approval its own request raised (README "Approvals"). Even where the
 * deployment says a person holds the MCP client (MCP_FACE_DECISIONS=true, this project),
 * `decide_approval` refuses, with UNAUTHORIZED, an approval raised by a call made through an MCP
 * face (any connection) or below one: the gated call of a child such a call started, and of that
 * child's own child, asked on any session's face. The approval stays pending; a person decides
 * it over HTTP. An approval the model raised on its own is still the client's to decide.
 */

const ECHO_THEN_DONE = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

const requested = (events: WireEvent[]) => ofType(events, "approval/requested");

/** `decide_approval` of `approvalId` on session `id`'s face, with `token`: the tool's answer. */
async function decideOnFace(id: string, token: string, approvalId: string) {
  const client = await connectMcpFace(id, token);
  const answer = await client.callTool({
    name: "decide_approval",
    arguments: { approval_id: approvalId, decision: "approve" },
  });
  await client.close();
  return answer;
}

/** The approval the root heard from a session below it (a child's, a grandchild's). */
async function approvalBelow(
  root: string,
): Promise<{ approvalId: string; sessionId: string; mcpFace?: boolean }> {
  const [asked] = requested(await waitForEvents(root, (es) => requested(es).length === 1));
  const data = asked!.data as { approvalId: string; sessionId: string; mcpFace?: boolean };
  expect(data.sessionId).not.toBe(root);
  return data;
}

describe("decide_approval with MCP_FACE_DECISIONS on", () => {
  it("refuses the approval of a call made through the face, from another connection too; HTTP decides it", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const caller = await connectMcpFace(id, token);
    const call = caller.callTool({ name: "echo", arguments: { text: "ping" } }, { timeout: 40_000 });
    const approval = await eventually(
      async () => (await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals[0],
      (a) => a !== undefined,
      { timeoutMs: 10_000, what: "the face call's approval" },
    );
    for (const who of [token, ADMIN]) {
      const refused = await decideOnFace(id, who, approval.approvalId);
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/^UNAUTHORIZED: .*raised by a call made through an MCP face/);
    }
    expect(ofType(await allEvents(id), "approval/decided")).toEqual([]);
    expect((await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals).toHaveLength(1);

    const decided = await api("POST", `/v1/sessions/${id}/approvals/${approval.approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    expect(textOf(await call)).toBe("ping");
    await caller.close();
  }, 45_000);

  it("refuses the gated call of a child that a subagent call through the face started (it would approve itself)", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const caller = await connectMcpFace(id, token);
    const call = caller.callTool(
      { name: "subagent", arguments: { description: "needs a yes", prompt: ECHO_THEN_DONE } },
      { timeout: 40_000 },
    );
    const { approvalId, sessionId: childId, mcpFace } = await approvalBelow(id);
    const refused = await decideOnFace(id, token, approvalId);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    expect(refused.isError).toBe(true);
    // the approval says where it came from, in every log that heard it
    expect(mcpFace).toBe(true);
    expect(ofType(await allEvents(childId), "approval/decided")).toEqual([]);

    // a person decides it on the session's path: the child's call runs and the subagent call answers
    const decided = await api("POST", `/v1/sessions/${id}/approvals/${approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    const result = await call;
    expect(textOf(result)).toContain("finished");
    await caller.close();
  }, 45_000);

  it("refuses the gated call of a grandchild below a face call, on the root's face and on the child's", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const caller = await connectMcpFace(id, token);
    // the child's model starts a grandchild (foreground) whose model calls echo
    const childPrompt = script(
      { call: [toolCall("subagent", { description: "grandchild", prompt: ECHO_THEN_DONE })] },
      { say: "child finished" },
    );
    const call = caller.callTool(
      { name: "subagent", arguments: { description: "child", prompt: childPrompt } },
      { timeout: 40_000 },
    );
    const { approvalId, sessionId: grandchild, mcpFace } = await approvalBelow(id);
    const child = (await api("GET", `/v1/sessions/${grandchild}`, { token })).body.parentSession as string;
    expect(child).not.toBe(id);
    for (const [face, who] of [
      [id, token],
      [child, ADMIN],
    ] as const) {
      const refused = await decideOnFace(face, who, approvalId);
      expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
      expect(refused.isError).toBe(true);
    }
    expect(mcpFace).toBe(true);
    expect(ofType(await allEvents(grandchild), "approval/decided")).toEqual([]);
    const decided = await api("POST", `/v1/sessions/${id}/approvals/${approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    expect(textOf(await call)).toContain("child finished");
    await caller.close();
  }, 45_000);
});
