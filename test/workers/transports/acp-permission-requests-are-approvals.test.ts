import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpNet, installAcpAgent } from "../../support/acp-agent";
import { api, createSession, putProvider, startOneShot, waitForRun } from "../../support/api";
import { allEvents, ofType, waitForEvents } from "../../support/logs";

/**
 * An ACP agent's `session/request_permission` (a coding agent asking to edit a file) is an
 * approval of the session that owns the run (README "Approvals"): approve answers with the
 * agent's allow-once option, deny with its reject-once option, a cancelled run with `cancelled`.
 * The agent is the test agent on the ACP SDK's agent side (test/support/acp-agent.ts).
 */

let net: AcpNet;
beforeAll(() => {
  net = installAcpAgent();
});
afterAll(() => net.restore());

async function acpProvider(): Promise<string> {
  const name = `acp-${crypto.randomUUID().slice(0, 8)}`;
  expect((await putProvider(name, { kind: "acp", url: "wss://agent.acp.test/acp" })).status).toBe(201);
  return name;
}

async function askedApproval(
  parent: string,
  n: number,
): Promise<{ approvalId: string; tool: string; args: any }> {
  const events = await waitForEvents(parent, (es) => ofType(es, "approval/requested").length >= n);
  return ofType(events, "approval/requested")[n - 1]!.data as { approvalId: string; tool: string; args: any };
}

describe("ACP permission requests are approvals", () => {
  it("approve answers the agent's allow-once option; deny its reject-once option; each run's result says which", async () => {
    const provider = await acpProvider();
    const parent = await createSession();
    const approved = await startOneShot(parent.id, { provider, prompt: "write /tmp/a.txt hello" });
    const first = await askedApproval(parent.id, 1);
    expect(first).toMatchObject({
      tool: provider,
      args: {
        toolCall: {
          title: "Write /tmp/a.txt",
          kind: "edit",
          rawInput: { path: "/tmp/a.txt", text: "hello" },
        },
        options: [
          { optionId: "yes", kind: "allow_once" },
          { optionId: "no", kind: "reject_once" },
        ],
      },
    });
    expect((await api("GET", `/v1/sessions/${parent.id}/approvals`)).body.approvals).toHaveLength(1);
    const decided = await api("POST", `/v1/sessions/${parent.id}/approvals/${first.approvalId}`, {
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    const run = await waitForRun(parent.id, approved.runId);
    expect(run.result).toMatchObject({
      stopReason: "completed",
      output: [{ type: "text", text: "wrote /tmp/a.txt" }],
    });

    const denied = await startOneShot(parent.id, { provider, prompt: "write /tmp/b.txt secret" });
    const second = await askedApproval(parent.id, 2);
    await api("POST", `/v1/sessions/${parent.id}/approvals/${second.approvalId}`, {
      body: { decision: "deny", reason: "not that file" },
    });
    const refused = await waitForRun(parent.id, denied.runId);
    expect(refused.result.output).toEqual([{ type: "text", text: "not allowed: no" }]);
    expect(ofType(await allEvents(parent.id), "approval/decided").map((e) => e.data)).toEqual([
      { approvalId: first.approvalId, decision: "approve", by: "admin" },
      { approvalId: second.approvalId, decision: "deny", reason: "not that file", by: "admin" },
    ]);
  });

  it("a run cancelled while its agent waits for permission answers cancelled, and its approval is denied saying so", async () => {
    const provider = await acpProvider();
    const parent = await createSession();
    const run = await startOneShot(parent.id, { provider, prompt: "write /tmp/c.txt late" });
    const asked = await askedApproval(parent.id, 1);
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${run.runId}`)).status).toBe(202);
    const events = await waitForEvents(parent.id, (es) => ofType(es, "approval/decided").length === 1);
    expect(ofType(events, "approval/decided")[0]!.data).toEqual({
      approvalId: asked.approvalId,
      decision: "deny",
      reason: "the run was cancelled",
      by: parent.id,
    });
    expect((await waitForRun(parent.id, run.runId)).result.stopReason).toBe("aborted");
    expect((await api("GET", `/v1/sessions/${parent.id}/approvals`)).body.approvals).toEqual([]);
  });
});
