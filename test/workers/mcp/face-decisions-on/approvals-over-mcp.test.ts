import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { ADMIN, api, createSession, workerFetch } from "../../../support/api";
import {
  allEvents,
  eventually,
  ofType,
  toolResults,
  waitForEvents,
  type WireEvent,
} from "../../../support/logs";
import { script, toolCall } from "../../../support/scripts";

/**
 * Approvals over a session's MCP server (README "Approvals", control.md §1), in a deployment that
 * says a person holds the client (MCP_FACE_DECISIONS=true): the official MCP SDK's client lists and
 * decides the pending approvals the session's model and its descendants raised with
 * `pending_approvals` and `decide_approval`, and a foreground `subagent` call whose child waits on
 * an approval says so in its progress notifications.
 */

const ECHO_THEN_DONE = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });

async function connect(id: string, token: string): Promise<Client> {
  const client = new Client({ name: "approvals-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
    fetch: (input, init) => workerFetch(new Request(input, init)),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

const requested = (events: WireEvent[]) => ofType(events, "approval/requested");

/** A session whose model calls `echo`, which waits for a decision; its approval request. */
async function waitingSession(): Promise<{ id: string; token: string; request: Record<string, unknown> }> {
  const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: ECHO_THEN_DONE } });
  expect(sent.status).toBe(202);
  const [request] = requested(await waitForEvents(id, (es) => requested(es).length === 1));
  return { id, token, request: request!.data };
}

describe("approvals over MCP", () => {
  it("lists both approval tools with their arguments", async () => {
    const { id, token } = await createSession();
    const client = await connect(id, token);
    const tools = (await client.listTools()).tools;
    const pending = tools.find((t) => t.name === "pending_approvals");
    const decide = tools.find((t) => t.name === "decide_approval");
    expect(pending?.description).toMatch(/waiting for a person's decision/);
    expect(pending?.inputSchema.properties ?? {}).toEqual({});
    expect(decide?.inputSchema).toMatchObject({
      type: "object",
      properties: {
        approval_id: { type: "string" },
        decision: { enum: ["approve", "deny"] },
        reason: { type: "string" },
      },
      required: ["approval_id", "decision"],
    });
    expect(decide?.outputSchema?.properties).toHaveProperty("approvalId");
    await client.close();
  });

  it("pending_approvals lists a held call; decide_approval approves it, the call runs once, and the other decision is ALREADY_DECIDED", async () => {
    const { id, token, request } = await waitingSession();
    const client = await connect(id, token);
    const listed = await client.callTool({ name: "pending_approvals", arguments: {} });
    const expected = {
      approvals: [
        {
          approvalId: request.approvalId,
          sessionId: id,
          tool: "echo",
          args: { text: "ping" },
          toolCallId: request.toolCallId,
          requestedAt: request.requestedAt,
        },
      ],
    };
    expect(listed.isError).toBeFalsy();
    expect(listed.structuredContent).toEqual(expected);
    expect(JSON.parse(textOf(listed))).toEqual(expected);

    const approved = await client.callTool({
      name: "decide_approval",
      arguments: { approval_id: request.approvalId, decision: "approve" },
    });
    expect(approved.isError).toBeFalsy();
    expect(approved.structuredContent).toEqual({ approvalId: request.approvalId, decision: "approve" });
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(toolResults(events)).toMatchObject([{ name: "echo", isError: false, text: "ping" }]);
    // decided through the session's own path, with its token
    expect(ofType(events, "approval/decided").map((e) => e.data)).toEqual([
      { approvalId: request.approvalId, decision: "approve", by: id },
    ]);
    expect((await client.callTool({ name: "pending_approvals", arguments: {} })).structuredContent).toEqual({
      approvals: [],
    });

    // the same decision again answers the same; the other one is a tool error naming the code
    const again = await client.callTool({
      name: "decide_approval",
      arguments: { approval_id: request.approvalId, decision: "approve" },
    });
    expect(again.structuredContent).toEqual({ approvalId: request.approvalId, decision: "approve" });
    const other = await client.callTool({
      name: "decide_approval",
      arguments: { approval_id: request.approvalId, decision: "deny", reason: "too late" },
    });
    expect(other.isError).toBe(true);
    expect(textOf(other)).toMatch(/^ALREADY_DECIDED: /);
    expect(toolResults(await allEvents(id))).toHaveLength(1);
    // the approval tools are the caller's, not session tools: no mcp/call for them
    expect(ofType(await allEvents(id), "mcp/call")).toEqual([]);
    await client.close();
  });

  it("an admin caller's denial is by admin and reaches the model with its reason", async () => {
    const { id, request } = await waitingSession();
    const client = await connect(id, ADMIN);
    const denied = await client.callTool({
      name: "decide_approval",
      arguments: { approval_id: request.approvalId, decision: "deny", reason: "not today" },
    });
    expect(denied.structuredContent).toEqual({ approvalId: request.approvalId, decision: "deny" });
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(toolResults(events)).toMatchObject([{ name: "echo", isError: true, text: "denied: not today" }]);
    expect(ofType(events, "approval/decided")[0]!.data).toEqual({
      approvalId: request.approvalId,
      decision: "deny",
      reason: "not today",
      by: "admin",
    });
    await client.close();
  });

  it("an unknown approval is NOT_FOUND, and bad arguments decide nothing", async () => {
    const { id, token, request } = await waitingSession();
    const client = await connect(id, token);
    for (const approval_id of [crypto.randomUUID(), "not-an-approval"]) {
      const unknown = await client.callTool({
        name: "decide_approval",
        arguments: { approval_id, decision: "approve" },
      });
      expect(unknown.isError).toBe(true);
      expect(textOf(unknown)).toMatch(/^NOT_FOUND: /);
    }
    const bad = await client
      .callTool({
        name: "decide_approval",
        arguments: { approval_id: request.approvalId, decision: "maybe" },
      })
      .then(
        (result) => result.isError === true,
        () => true,
      );
    expect(bad).toBe(true);
    expect(ofType(await allEvents(id), "approval/decided")).toEqual([]);
    expect(
      (await client.callTool({ name: "pending_approvals", arguments: {} })).structuredContent,
    ).toMatchObject({
      approvals: [{ approvalId: request.approvalId }],
    });
    await client.close();
  });

  it("a foreground subagent call whose child waits on an approval says so in its progress, refuses decide_approval for it, and answers once a person decides it", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const client = await connect(id, token);
    const progress: { progress: number; message?: string | undefined }[] = [];
    const call = client.callTool(
      { name: "subagent", arguments: { description: "needs a yes", prompt: ECHO_THEN_DONE } },
      { onprogress: (p) => progress.push(p), timeout: 40_000 },
    );
    // the child inherits the requirement: its echo waits, and the request reaches this session
    const [asked] = requested(await waitForEvents(id, (es) => requested(es).length === 1));
    const { approvalId, sessionId: childId } = asked!.data as { approvalId: string; sessionId: string };
    expect(childId).not.toBe(id);
    const waiting = await eventually(
      async () => progress.find((p) => p.message?.includes("waits for a decision")),
      (p) => p !== undefined,
      { timeoutMs: 15_000, what: "a progress notification about the approval" },
    );
    expect(waiting!.message).toContain(approvalId);
    expect(waiting!.message).toContain("echo");
    expect(waiting!.message).toContain(childId);

    // another connection sees the child's approval in the session's list, but may not decide it:
    // the child was started through the face (no MCP client approves its own child's call)
    const other = await connect(id, token);
    const listed = await other.callTool({ name: "pending_approvals", arguments: {} });
    expect(listed.structuredContent).toMatchObject({
      approvals: [{ approvalId, sessionId: childId, tool: "echo", args: { text: "ping" } }],
    });
    const refused = await other.callTool({
      name: "decide_approval",
      arguments: { approval_id: approvalId, decision: "approve" },
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    // a person decides it over HTTP
    const decided = await api("POST", `/v1/sessions/${id}/approvals/${approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);

    const result = await call;
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain("finished");
    const childLog = await allEvents(childId);
    expect(toolResults(childLog)).toMatchObject([{ name: "echo", isError: false, text: "ping" }]);
    expect(ofType(childLog, "approval/decided").map((e) => e.data)).toEqual([
      { approvalId, decision: "approve", by: id },
    ]);
    await other.close();
    await client.close();
  }, 45_000);
});
