import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { allEvents, ofType, waitForEvents } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";
import { connectMcpFace } from "../../support/mcp-face";

/**
 * The MCP face's own tools obey the session's tool filter like every tool (README "Approvals"):
 * a filter that allows only `list_agents` hides `pending_approvals` and `decide_approval` from
 * `tools/list` and refuses them on `tools/call`; a filter may name them. And `decide_approval` is
 * offered only where the deployment says a person holds the client (MCP_FACE_DECISIONS=true; this
 * project's deployment leaves it off): a client lists pending approvals but decides none.
 */

async function toolNames(id: string, token: string): Promise<string[]> {
  const client = await connectMcpFace(id, token);
  const names = (await client.listTools()).tools.map((t) => t.name);
  await client.close();
  return names;
}

/** A tools/call the face refuses: the SDK's error result, or a protocol error. */
async function refusal(
  id: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
): Promise<string> {
  const client = await connectMcpFace(id, token);
  const outcome = await client.callTool({ name, arguments: args }).then(
    (result) => (result.isError ? JSON.stringify(result.content) : "ran"),
    (error: Error) => error.message,
  );
  await client.close();
  return outcome;
}

describe("the MCP face's approval tools", () => {
  it("are hidden and refused under a filter that allows only list_agents", async () => {
    const { id, token } = await createSession({
      requireApproval: ["echo"],
      toolFilter: { allow: ["list_agents"] },
    });
    expect(await toolNames(id, token)).toEqual(["list_agents"]);
    expect(await refusal(id, token, "pending_approvals", {})).toMatch(/pending_approvals/);
    expect(
      await refusal(id, token, "decide_approval", { approval_id: crypto.randomUUID(), decision: "approve" }),
    ).toMatch(/decide_approval/);
  });

  it("may be named by a filter: denying pending_approvals hides it, and a filter that allows it shows it", async () => {
    const denied = await createSession({ toolFilter: { deny: ["pending_approvals"] } });
    expect(await toolNames(denied.id, denied.token)).not.toContain("pending_approvals");
    const allowed = await createSession({ toolFilter: { allow: ["list_agents", "pending_approvals"] } });
    expect((await toolNames(allowed.id, allowed.token)).sort()).toEqual(["list_agents", "pending_approvals"]);
  });

  it("without MCP_FACE_DECISIONS: pending_approvals lists, decide_approval is neither listed nor callable", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const sent = await api("POST", `/v1/sessions/${id}/messages`, {
      token,
      body: { content: script({ call: [toolCall("echo", { text: "ping" })] }, { say: "done" }) },
    });
    expect(sent.status).toBe(202);
    const [asked] = ofType(
      await waitForEvents(id, (es) => ofType(es, "approval/requested").length === 1),
      "approval/requested",
    );
    const approvalId = (asked!.data as { approvalId: string }).approvalId;
    const names = await toolNames(id, token);
    expect(names).toContain("pending_approvals");
    expect(names).not.toContain("decide_approval");
    const client = await connectMcpFace(id, token);
    const listed = await client.callTool({ name: "pending_approvals", arguments: {} });
    expect(listed.structuredContent).toMatchObject({ approvals: [{ approvalId }] });
    await client.close();
    expect(
      await refusal(id, token, "decide_approval", { approval_id: approvalId, decision: "approve" }),
    ).toMatch(/decide_approval/);
    expect(ofType(await allEvents(id), "approval/decided")).toEqual([]);
  });
});
