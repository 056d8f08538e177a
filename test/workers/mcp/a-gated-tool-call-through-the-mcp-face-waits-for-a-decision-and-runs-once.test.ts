import { describe, expect, it } from "vitest";
import { ADMIN, api, createSession, startChild } from "../../support/api";
import { allEvents, eventually, ofType, waitForEvents, type WireEvent } from "../../support/logs";
import { connectMcpFace } from "../../support/mcp-face";

/**
 * A tool call through a session's MCP face is gated like the model's own (README "Approvals"):
 * with `echo` needing approval, `tools/call echo` does not run at once; its approval is the
 * session's, listed over HTTP (and marked as raised through the face), and the call answers only
 * once a person decided it there: it runs once on approve, answers `denied: <reason>` on deny. A
 * client without elicitation keeps getting progress notifications that say the call waits.
 */

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

const requested = (events: WireEvent[]) => ofType(events, "approval/requested");

/** The session's one pending approval, as GET /v1/sessions/:id/approvals lists it. */
async function pendingOf(id: string, token: string): Promise<Record<string, unknown>> {
  const listed = await eventually(
    async () => (await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals as unknown[],
    (approvals) => approvals.length === 1,
    { timeoutMs: 10_000, what: "the face call's approval in the session's list" },
  );
  return listed[0] as Record<string, unknown>;
}

describe("a gated call through the MCP face", () => {
  it("waits for a decision (with progress) and runs once when a person approves it over HTTP", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const client = await connectMcpFace(id, token);
    const progress: { message?: string | undefined }[] = [];
    let answered = false;
    const call = client
      .callTool(
        { name: "echo", arguments: { text: "ping" } },
        { onprogress: (p) => progress.push(p), timeout: 40_000 },
      )
      .finally(() => {
        answered = true;
      });

    const approval = await pendingOf(id, token);
    expect(approval).toMatchObject({ sessionId: id, tool: "echo", args: { text: "ping" } });
    const [asked] = requested(await allEvents(id));
    expect(asked!.data).toMatchObject({ approvalId: approval.approvalId, mcpFace: true });
    // nothing ran: the call is held, and says so while it waits
    await eventually(
      async () => progress.find((p) => p.message?.includes(String(approval.approvalId))),
      (p) => p !== undefined,
      { timeoutMs: 15_000, what: "a progress notification naming the approval" },
    );
    expect(answered).toBe(false);
    expect(ofType(await allEvents(id), "mcp/result")).toEqual([]);

    const decided = await api("POST", `/v1/sessions/${id}/approvals/${approval.approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    const result = await call;
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("ping");
    const events = await waitForEvents(id, (es) => ofType(es, "mcp/result").length === 1);
    expect(ofType(events, "mcp/call")).toHaveLength(1);
    expect(ofType(events, "mcp/result").map((e) => e.data)).toMatchObject([
      { name: "echo", isError: false, content: [{ type: "text", text: "ping" }] },
    ]);
    expect(ofType(events, "approval/decided").map((e) => e.data)).toEqual([
      { approvalId: approval.approvalId, decision: "approve", by: id },
    ]);
    // approving again runs nothing more
    const again = await api("POST", `/v1/sessions/${id}/approvals/${approval.approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(again.status).toBe(200);
    expect(ofType(await allEvents(id), "mcp/result")).toHaveLength(1);
    await client.close();
  }, 45_000);

  it("answers denied, with the reason, when a person denies it", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const client = await connectMcpFace(id, token);
    const call = client.callTool({ name: "echo", arguments: { text: "ping" } }, { timeout: 40_000 });
    const approval = await pendingOf(id, token);
    const denied = await api("POST", `/v1/sessions/${id}/approvals/${approval.approvalId}`, {
      token,
      body: { decision: "deny", reason: "not from a script" },
    });
    expect(denied.status).toBe(200);
    const result = await call;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("denied: not from a script");
    const events = await waitForEvents(id, (es) => ofType(es, "mcp/result").length === 1);
    expect(ofType(events, "mcp/result")[0]!.data).toMatchObject({ isError: true });
    await client.close();
  }, 45_000);

  it("is in every ancestor's list and decidable there: a child's face call, decided on the root's path", async () => {
    const { id: root, token } = await createSession({ requireApproval: ["echo"] });
    const { childId: child } = await startChild(root, { prompt: "stand by" });
    // a session token reads its descendants; acting on a child's face takes an admin
    const client = await connectMcpFace(child, ADMIN);
    const call = client.callTool({ name: "echo", arguments: { text: "from below" } }, { timeout: 40_000 });
    const approval = await pendingOf(root, token);
    expect(approval).toMatchObject({ sessionId: child, tool: "echo" });
    const decided = await api("POST", `/v1/sessions/${root}/approvals/${approval.approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    expect(textOf(await call)).toBe("from below");
    await client.close();
  }, 45_000);
});
