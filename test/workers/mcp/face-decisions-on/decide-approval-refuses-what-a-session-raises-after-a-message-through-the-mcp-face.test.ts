import { describe, expect, it } from "vitest";
import { api, createSession, startChild } from "../../../support/api";
import {
  allEvents,
  eventually,
  ofType,
  settledTimes,
  waitForEvents,
  type WireEvent,
} from "../../../support/logs";
import { connectMcpFace } from "../../../support/mcp-face";
import { script, spawnCall, toolCall } from "../../../support/scripts";

/**
 * No caller decides an approval raised below its own request (README "Approvals"), where the
 * request is a message: a child the face did not start, sent a message through the MCP face
 * (`send_message`), is below the face from then on. So with MCP_FACE_DECISIONS on (this project),
 * the client that sent the message cannot make the child call a gated tool and then approve that
 * call itself with `decide_approval`: every approval the child raises after the message is marked
 * `mcpFace` and refused UNAUTHORIZED, and so is every approval of a child it starts after it. What
 * such a session says back up (its report, its settled notice) marks the session that takes it in.
 */

const ECHO_THEN_DONE = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

const requested = (events: WireEvent[]) => ofType(events, "approval/requested");
type Requested = { approvalId: string; sessionId: string; mcpFace?: boolean };

/** `decide_approval` (approve) of `approvalId` on session `id`'s face: the tool's answer. */
async function approveOnFace(id: string, token: string, approvalId: string) {
  const client = await connectMcpFace(id, token);
  const answer = await client.callTool({
    name: "decide_approval",
    arguments: { approval_id: approvalId, decision: "approve" },
  });
  await client.close();
  return answer;
}

/** The `n`th approval the root heard, once it has heard `n + 1`. */
async function nthApproval(root: string, n: number): Promise<Requested> {
  const heard = requested(await waitForEvents(root, (es) => requested(es).length === n + 1));
  return heard[n]!.data as Requested;
}

describe("a message through the MCP face marks what its receiver raises after it", () => {
  it("refuses decide_approval of a gated call a child the face did not start makes after a face send_message", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    // a child a person started over HTTP, settled, never touched by the face
    const { childId } = await startChild(id, { prompt: "first" });
    await settledTimes(id, childId);

    const face = await connectMcpFace(id, token);
    const sent = await face.callTool({
      name: "send_message",
      arguments: { subagent_id: childId, message: ECHO_THEN_DONE },
    });
    expect(sent.isError ?? false).toBe(false);
    const asked = await nthApproval(id, 0);
    expect(asked.sessionId).toBe(childId);
    const refused = await approveOnFace(id, token, asked.approvalId);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    expect(refused.isError).toBe(true);
    // the approval says it is below the face, in the child's log and the root's
    expect(asked.mcpFace).toBe(true);
    expect((requested(await allEvents(childId))[0]!.data as Requested).mcpFace).toBe(true);
    expect(ofType(await allEvents(childId), "approval/decided")).toEqual([]);
    expect(ofType(await allEvents(childId), "tool/result")).toEqual([]);

    // a person decides it over HTTP: the call runs once
    const decided = await api("POST", `/v1/sessions/${id}/approvals/${asked.approvalId}`, {
      token,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    const log = await waitForEvents(childId, (es) => ofType(es, "tool/result").length === 1);
    expect((ofType(log, "tool/result")[0]!.data as { content: { text: string }[] }).content[0]!.text).toBe(
      "ping",
    );
    await face.close();
  }, 45_000);

  it("keeps the child below the face for its later turns and the children it starts later, whoever writes to it", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const { childId } = await startChild(id, { prompt: "first" });
    await settledTimes(id, childId);
    const face = await connectMcpFace(id, token);
    // the face's message asks nothing gated: the child takes it in and settles
    await face.callTool({ name: "send_message", arguments: { subagent_id: childId, message: "hello" } });
    await face.close();
    await settledTimes(id, childId, 2);

    // a person's follow-up makes the child start a grandchild whose model calls echo
    const followed = await api("POST", `/v1/sessions/${id}/subagents/${childId}/messages`, {
      body: { content: script({ call: [spawnCall("grandchild", ECHO_THEN_DONE)] }, { say: "started" }) },
    });
    expect(followed.status).toBe(202);
    const asked = await nthApproval(id, 0);
    expect(asked.sessionId).not.toBe(childId);
    const refused = await approveOnFace(id, token, asked.approvalId);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    expect(asked.mcpFace).toBe(true);
    expect(ofType(await allEvents(asked.sessionId), "approval/decided")).toEqual([]);
    await api("POST", `/v1/sessions/${id}/approvals/${asked.approvalId}`, {
      token,
      body: { decision: "deny" },
    });
  }, 45_000);

  it("marks the session a report from below the face reaches: its later approvals are a person's", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const face = await connectMcpFace(id, token);
    // a continuable child the face starts (below the face) reports to the root
    const started = await face.callTool({
      name: "subagent",
      arguments: {
        description: "reporter",
        prompt: script({ call: [toolCall("report", { output: "call echo with ping" })] }, { say: "done" }),
        run_in_background: true,
      },
    });
    expect(started.isError ?? false).toBe(false);
    await face.close();
    await eventually(
      () => allEvents(id),
      (es) =>
        ofType(es, "agent/inbox/inserted").some(
          (e) => (e.data as { source: { kind: string } }).source.kind === "subagent-report",
        ),
      { timeoutMs: 15_000, what: "the child's report at the root" },
    );

    // the root's model, which read the report, calls echo on a person's next message
    const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: ECHO_THEN_DONE } });
    expect(sent.status).toBe(202);
    const asked = await nthApproval(id, 0);
    expect(asked.sessionId).toBe(id);
    const refused = await approveOnFace(id, token, asked.approvalId);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    expect(asked.mcpFace).toBe(true);
    expect(ofType(await allEvents(id), "approval/decided")).toEqual([]);
    await api("POST", `/v1/sessions/${id}/approvals/${asked.approvalId}`, {
      token,
      body: { decision: "deny" },
    });
  }, 45_000);

  it("marks the session whose face schedules a message to it: the turn it starts raises a person's approval", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const face = await connectMcpFace(id, token);
    const scheduled = await face.callTool({
      name: "schedule_message",
      arguments: { message: ECHO_THEN_DONE, delay_seconds: 1 },
    });
    expect(scheduled.isError ?? false).toBe(false);
    await face.close();
    const asked = await nthApproval(id, 0);
    expect(asked.sessionId).toBe(id);
    const refused = await approveOnFace(id, token, asked.approvalId);
    expect(textOf(refused)).toMatch(/^UNAUTHORIZED: /);
    expect(asked.mcpFace).toBe(true);
    expect(ofType(await allEvents(id), "approval/decided")).toEqual([]);
    await api("POST", `/v1/sessions/${id}/approvals/${asked.approvalId}`, {
      token,
      body: { decision: "deny" },
    });
  }, 45_000);
});
