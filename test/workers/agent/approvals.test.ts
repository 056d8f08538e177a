import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, createSession, expectError, rpc, startChild, view } from "../../support/api";
import {
  allEvents,
  eventually,
  ofType,
  toolResults,
  turnReasons,
  waitForEvents,
  type WireEvent,
} from "../../support/logs";
import { evict, specOf, stub } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

/**
 * Approvals (README "Approvals"): a call of a tool named in `requireApproval` waits, durably and
 * holding no model call, for a person's decision; the request and the decision reach every
 * ancestor's log; any ancestor's path decides; approve runs the call once, deny answers it
 * `denied`; the turn's end and the timeout deny what is pending.
 */

const ECHO_THEN_DONE = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });

async function send(id: string, content: string): Promise<void> {
  expect((await api("POST", `/v1/sessions/${id}/messages`, { body: { content } })).status).toBe(202);
}

async function pending(id: string, token?: string): Promise<Record<string, unknown>[]> {
  const res = await api("GET", `/v1/sessions/${id}/approvals`, token ? { token } : {});
  expect(res.status).toBe(200);
  return res.body.approvals;
}

async function decide(id: string, approvalId: string, decision: string, reason?: string, token?: string) {
  return api("POST", `/v1/sessions/${id}/approvals/${approvalId}`, {
    body: { decision, ...(reason ? { reason } : {}) },
    ...(token ? { token } : {}),
  });
}

const requested = (events: WireEvent[]) => ofType(events, "approval/requested");

describe("approvals of one session", () => {
  it("a call that needs approval waits (status waiting, no model call open); approve runs it once and the turn goes on", async () => {
    const { id } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    await send(id, ECHO_THEN_DONE);
    const asked = await waitForEvents(id, (es) => requested(es).length === 1);
    const [request] = requested(asked);
    expect(request!.data).toMatchObject({ sessionId: id, tool: "echo", args: { text: "ping" } });
    expect((await view(id)).status).toBe("waiting");
    expect(toolResults(asked)).toEqual([]);
    const listed = await pending(id);
    const { approvalId } = request!.data as { approvalId: string };
    expect(listed).toEqual([
      {
        approvalId,
        sessionId: id,
        tool: "echo",
        args: { text: "ping" },
        toolCallId: (request!.data as { toolCallId: string }).toolCallId,
        requestedAt: (request!.data as { requestedAt: number }).requestedAt,
      },
    ]);

    const approved = await decide(id, approvalId, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ approvalId, decision: "approve" });
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(turnReasons(events)).toEqual(["completed"]);
    expect(toolResults(events)).toMatchObject([{ name: "echo", isError: false, text: "ping" }]);
    expect(ofType(events, "approval/decided").map((e) => e.data)).toEqual([
      { approvalId, decision: "approve", by: "admin" },
    ]);
    expect(await pending(id)).toEqual([]);
    // the same decision again answers the same; the other one is refused
    expect((await decide(id, approvalId, "approve")).body).toEqual({ approvalId, decision: "approve" });
    expectError(await decide(id, approvalId, "deny"), 409, "ALREADY_DECIDED");
    expect(toolResults(await allEvents(id))).toHaveLength(1);
  });

  it("deny answers the call with an error result starting `denied` and the reason; the model goes on", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["ech*"] });
    await send(id, ECHO_THEN_DONE);
    const [request] = requested(await waitForEvents(id, (es) => requested(es).length === 1));
    const { approvalId } = request!.data as { approvalId: string };
    expect((await decide(id, approvalId, "deny", "not today", token)).body).toEqual({
      approvalId,
      decision: "deny",
    });
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(toolResults(events)).toMatchObject([{ name: "echo", isError: true, text: "denied: not today" }]);
    expect(turnReasons(events)).toEqual(["completed"]);
    expect(ofType(events, "approval/decided")[0]!.data).toEqual({
      approvalId,
      decision: "deny",
      reason: "not today",
      by: id,
    });
    expectError(await decide(id, approvalId, "approve"), 409, "ALREADY_DECIDED");
  });

  it("an interrupt denies what is pending; a later decision is refused", async () => {
    const { id } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    await send(id, ECHO_THEN_DONE);
    const [request] = requested(await waitForEvents(id, (es) => requested(es).length === 1));
    const { approvalId } = request!.data as { approvalId: string };
    expect((await api("POST", `/v1/sessions/${id}/interrupt`)).status).toBe(202);
    const events = await waitForEvents(id, (es) => ofType(es, "approval/decided").length === 1);
    expect(ofType(events, "approval/decided")[0]!.data).toEqual({
      approvalId,
      decision: "deny",
      reason: "the turn was interrupted",
      by: id,
    });
    expect(turnReasons(events)).toEqual(["aborted"]);
    expectError(await decide(id, approvalId, "approve"), 409, "ALREADY_DECIDED");
    expect(toolResults(await allEvents(id))).toEqual([]);
  });

  it("approvalTimeoutSeconds denies an approval still pending after that long", async () => {
    const { id } = await createSession({
      model: "scripted",
      requireApproval: ["echo"],
      approvalTimeoutSeconds: 1,
    });
    await send(id, ECHO_THEN_DONE);
    await waitForEvents(id, (es) => requested(es).length === 1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await runDurableObjectAlarm(stub(id));
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(toolResults(events)).toMatchObject([
      { isError: true, text: "denied: no decision came within 1 s" },
    ]);
  });

  it("an evicted object keeps the approval pending and decidable; the approved call runs once", async () => {
    const { id } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    await send(id, ECHO_THEN_DONE);
    const [request] = requested(await waitForEvents(id, (es) => requested(es).length === 1));
    await evict(id);
    expect(await pending(id)).toHaveLength(1);
    await runDurableObjectAlarm(stub(id));
    expect(toolResults(await allEvents(id))).toEqual([]);
    const { approvalId } = request!.data as { approvalId: string };
    expect((await rpc.decide(id, approvalId, "approve")).decision).toBe("approve");
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    await evict(id);
    await runDurableObjectAlarm(stub(id));
    expect(toolResults(await allEvents(id))).toHaveLength(1);
    expect(turnReasons(events)).toEqual(["completed"]);
  });

  it("a session holds at most 32 pending approvals: a call past them is answered with an error at once", async () => {
    const { id } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const calls = Array.from({ length: 33 }, (_, i) => toolCall("echo", { text: `call ${i}` }));
    await send(id, script({ call: calls }, { say: "finished" }));
    const events = await waitForEvents(
      id,
      (es) => requested(es).length === 32 && toolResults(es).length === 1,
    );
    expect(toolResults(events)).toMatchObject([
      {
        isError: true,
        text: "Error: the call was not run: this session already waits on 32 approvals, the most it may",
      },
    ]);
    expect(await pending(id)).toHaveLength(32);
    expect((await view(id)).status).toBe("waiting");
  });

  it("sessions without requirements run their calls as before; a bad pattern is refused", async () => {
    const { id } = await createSession({ model: "scripted" });
    await send(id, ECHO_THEN_DONE);
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 1);
    expect(requested(events)).toEqual([]);
    expect(toolResults(events)).toHaveLength(1);
    expectError(
      await api("POST", "/v1/sessions", { body: { requireApproval: ["ec*ho"] } }),
      400,
      "INVALID_REQUEST",
    );
  });
});

describe("approvals up the tree", () => {
  it("a grandchild's approval reaches every ancestor's log, is listed and decided at the root, and its call runs once", async () => {
    const root = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const { childId } = await startChild(root.id, { prompt: "wait for work" });
    await waitForEvents(childId, (es) => ofType(es, "turn/end").length === 1);
    // the child starts a grandchild that calls echo: the requirement is inherited down
    const grand = await api("POST", `/v1/sessions/${childId}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "grandchild", prompt: ECHO_THEN_DONE },
    });
    expect(grand.status).toBe(202);
    const grandId = grand.body.childId as string;
    const [asked] = requested(await waitForEvents(grandId, (es) => requested(es).length === 1));
    const { approvalId } = asked!.data as { approvalId: string };
    await waitForEvents(root.id, (es) => requested(es).length === 1);
    expect(requested(await allEvents(childId)).map((e) => e.data)).toEqual([asked!.data]);
    expect(requested(await allEvents(root.id)).map((e) => e.data)).toEqual([asked!.data]);
    expect((await pending(root.id)).map((a) => a.approvalId)).toEqual([approvalId]);
    expect((await pending(root.id, root.token)).map((a) => a.sessionId)).toEqual([grandId]);

    // from the grandchild's path the root's approvals are out of reach; a stranger learns nothing
    expectError(await decide(grandId, crypto.randomUUID(), "approve"), 404, "NOT_FOUND");
    const stranger = await createSession({ model: "scripted" });
    expectError(await decide(root.id, approvalId, "approve", undefined, stranger.token), 404, "NOT_FOUND");

    const decided = await decide(root.id, approvalId, "approve", undefined, root.token);
    expect(decided.body).toEqual({ approvalId, decision: "approve" });
    const grandLog = await waitForEvents(grandId, (es) => ofType(es, "turn/end").length === 1);
    expect(toolResults(grandLog)).toHaveLength(1);
    expect(ofType(grandLog, "approval/decided")[0]!.data).toEqual({
      approvalId,
      decision: "approve",
      by: root.id,
    });
    await waitForEvents(root.id, (es) => ofType(es, "approval/decided").length === 1);
    expect(ofType(await allEvents(childId), "approval/decided")).toHaveLength(1);
    expect(await pending(root.id)).toEqual([]);
  });

  it("an approval asked while the grandchild is evicted and its parent restarted is listed at the root, decided there, and runs once", async () => {
    const root = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const { childId } = await startChild(root.id, { prompt: "wait for work" });
    await waitForEvents(childId, (es) => ofType(es, "turn/end").length === 1);
    const grand = await api("POST", `/v1/sessions/${childId}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "grandchild", prompt: ECHO_THEN_DONE },
    });
    const grandId = grand.body.childId as string;
    await waitForEvents(grandId, (es) => requested(es).length === 1);
    await evict(grandId, childId);
    const [listed] = await eventually(
      () => pending(root.id),
      (list) => list.length === 1,
    );
    expect(listed).toMatchObject({ sessionId: grandId, tool: "echo" });
    await evict(grandId, childId);
    expect((await decide(root.id, listed!.approvalId as string, "approve")).status).toBe(200);
    const grandLog = await waitForEvents(grandId, (es) => ofType(es, "turn/end").length === 1);
    await evict(grandId);
    await runDurableObjectAlarm(stub(grandId));
    expect(toolResults(await allEvents(grandId))).toHaveLength(1);
    expect(turnReasons(grandLog)).toEqual(["completed"]);
    await eventually(
      async () => ofType(await allEvents(root.id), "approval/decided").length,
      (n) => n === 1,
    );
  });

  it("a child's requirements are its parent's plus its own", async () => {
    const root = await createSession({ model: "scripted", requireApproval: ["deploy_*"] });
    const started = await api("POST", `/v1/sessions/${root.id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "hi", requireApproval: ["echo"] },
    });
    expect(started.status).toBe(201);
    expect((await specOf(root.id, started.body.id)).options.requireApproval).toEqual(["deploy_*", "echo"]);
  });
});
