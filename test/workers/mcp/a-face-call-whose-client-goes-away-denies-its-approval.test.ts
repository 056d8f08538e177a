import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { eventually, allEvents, ofType } from "../../support/logs";
import { connectMcpFace } from "../../support/mcp-face";

/**
 * A gated call through the MCP face waits only while its request does (README "Approvals"): when
 * the client goes away (it closes its connection, which aborts the HTTP request that carries the
 * call), the approval is denied saying so, and the call never runs.
 */

describe("a face call whose client goes away", () => {
  it("denies its approval, saying the request ended, and runs nothing", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const client = await connectMcpFace(id, token);
    const call = client
      .callTool({ name: "echo", arguments: { text: "ping" } }, { timeout: 40_000 })
      .catch((error: Error) => error);
    await eventually(
      async () => (await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals,
      (a) => a.length === 1,
      { timeoutMs: 10_000, what: "the face call's approval" },
    );
    await client.close();
    await call;
    const decided = await eventually(
      async () => ofType(await allEvents(id), "approval/decided").map((e) => e.data),
      (d) => d.length === 1,
      { timeoutMs: 15_000, what: "the approval's denial" },
    );
    expect(decided[0]).toMatchObject({
      decision: "deny",
      reason: "the MCP request that made the call ended before a decision",
    });
    expect(ofType(await allEvents(id), "tool/result")).toEqual([]);
    expect((await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals).toEqual([]);
  }, 45_000);
});
