import { env, evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN, api, createSession, putProvider, startOneShot, waitForRun } from "../../support/api";
import { allEvents, eventually, ofType } from "../../support/logs";
import { stub } from "../../support/objects";
import { expectNoCredential, installRemoteNet, type RemoteNet, transportOf } from "../../support/remote";
import { LONG_TURN, script } from "../../support/scripts";

/**
 * The `a2a` provider kind (docs/semantics.md §12): one-shot children on an A2A agent, through the
 * official SDK's client. Against this runtime's own A2A face (the Worker plays the far
 * deployment, test/support/remote.ts) and against an agent built in the tests on the SDK's server
 * side (test/setup/a2a-agent.ts): completed, failed, rejected, input-required, canceled and
 * unreachable agents, a restart mid-run, and no credential outside the transport row.
 */

const { TEST_A2A_URL: AGENT_URL, TEST_A2A_TOKEN: AGENT_TOKEN } = env as unknown as {
  TEST_A2A_URL: string;
  TEST_A2A_TOKEN: string;
};

let net: RemoteNet;
beforeAll(() => {
  net = installRemoteNet();
});
afterAll(() => net.restore());
afterEach(() => {
  net.remoteDown = false;
  vi.useRealTimers();
});

async function registerA2a(url: string, token?: string): Promise<string> {
  const name = `a2a-${crypto.randomUUID().slice(0, 8)}`;
  const res = await putProvider(name, { kind: "a2a", url, ...(token === undefined ? {} : { token }) });
  expect(res.status).toBe(201);
  return name;
}

async function agentStats(): Promise<{
  tasksCreated: number;
  cancels: number;
  messagesByMessageId: Record<string, number>;
}> {
  return (await (await fetch(`${AGENT_URL}/__stats`)).json()) as any;
}

/**
 * This Worker's own A2A face, registered where its agent card says it lives: the card names
 * PUBLIC_URL's origin (https://parent.test here), and a card's endpoint must be on the origin the
 * provider was registered with (README, Security and limits: "Outbound requests").
 */
const FACE_URL = "https://parent.test";

describe("a2a providers: a deployment delegating to another over A2A", () => {
  it("a one-shot run on this runtime's own A2A face completes with the far session's answer, once", async () => {
    const provider = await registerA2a(FACE_URL, ADMIN);
    const listed = (await api("GET", "/v1/providers")).body as { providers: any[] };
    expect(listed.providers.find((p) => p.name === provider)).toEqual({
      name: provider,
      kind: "a2a",
      capabilities: { outputSchema: false, depthLimit: false, toolFilter: false, persona: false },
      inheritsParentContext: false,
      continuable: false,
      local: false,
      url: FACE_URL,
      tenants: ["default"],
    });
    const parent = await createSession();
    const started = await startOneShot(parent.id, { provider, prompt: "hello over a2a", label: "far" });
    expect(started).toEqual({ runId: started.runId, id: `a2a:${started.runId}`, local: false });
    const run = await waitForRun(parent.id, started.runId);
    expect(run.result).toEqual({
      output: [{ type: "text", text: "echo: hello over a2a" }],
      stopReason: "completed",
    });

    // the task is a session of the far deployment, which got the prompt once
    const row = await transportOf(parent.id, started.runId);
    expect(row).toMatchObject({ protocol: "a2a", phase: "done" });
    expect(run.counterpart).toEqual({ kind: "a2a", id: row.remote_id });
    const taskLog = await allEvents(row.remote_id!);
    expect(ofType(taskLog, "user/message").map((e) => (e.data as any).content)).toEqual([
      [{ type: "text", text: "hello over a2a" }],
    ]);
    const sends = net.calls.filter((c) => c.path === "/v1/a2a" && c.body.includes(`run-${started.runId}`));
    expect(sends).toHaveLength(1);

    // the parent's log names the task: start, the counterpart, one end
    const events = await allEvents(parent.id);
    expect(ofType(events, "subagent/remote").map((e) => e.data)).toEqual([
      { runId: started.runId, kind: "a2a", remoteId: row.remote_id },
    ]);
    expect(ofType(events, "subagent/end").map((e) => (e.data as any).stopReason)).toEqual(["completed"]);
    await expectNoCredential(parent.id, [ADMIN]);
  });

  it("a parent evicted mid-run goes on following the same task and learns one result", async () => {
    const provider = await registerA2a(FACE_URL, ADMIN);
    const parent = await createSession();
    const { runId } = await startOneShot(parent.id, {
      provider,
      prompt: script({ think: 1500 }, { say: "after the restart" }),
    });
    const before = await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    await evictDurableObject(stub(parent.id));
    await runDurableObjectAlarm(stub(parent.id));
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({
      output: [{ type: "text", text: "after the restart" }],
      stopReason: "completed",
    });
    expect((await transportOf(parent.id, runId)).remote_id).toBe(before.remote_id);
    expect(net.calls.filter((c) => c.path === "/v1/a2a" && c.body.includes(`run-${runId}`))).toHaveLength(1);
    expect(ofType(await allEvents(parent.id), "subagent/end")).toHaveLength(1);
  });

  it("DELETE cancels the remote task and settles the run aborted", async () => {
    const provider = await registerA2a(FACE_URL, ADMIN);
    const parent = await createSession();
    const { runId } = await startOneShot(parent.id, { provider, prompt: LONG_TURN });
    const { remote_id: taskId } = await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${runId}`)).status).toBe(202);
    const run = await waitForRun(parent.id, runId, 3_000);
    expect(run.result).toEqual({
      output: [],
      stopReason: "aborted",
      diagnostic: "the run was cancelled by its parent",
    });
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "done",
    );
    const taskLog = await eventually(
      () => allEvents(taskId!),
      (es) => ofType(es, "turn/end").length === 1,
    );
    expect(ofType(taskLog, "turn/end")[0]!.data).toMatchObject({ reason: "aborted" });
  });
});

describe("a2a providers: an agent built on the SDK's server side", () => {
  async function runOn(prompt: string, token = AGENT_TOKEN) {
    const provider = await registerA2a(AGENT_URL, token);
    const parent = await createSession();
    const { runId } = await startOneShot(parent.id, { provider, prompt });
    return { parent, runId, run: await waitForRun(parent.id, runId) };
  }

  it("completed: the final message's text is the output", async () => {
    const { run } = await runOn("echo: from the sdk agent");
    expect(run.result).toEqual({
      output: [{ type: "text", text: "from the sdk agent" }],
      stopReason: "completed",
    });
  });

  it("failed, rejected and input-required tasks end as error with a diagnostic saying so", async () => {
    expect((await runOn("fail: it broke")).run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic: "the A2A agent's task failed: it broke",
    });
    expect((await runOn("reject")).run.result).toMatchObject({
      stopReason: "error",
      diagnostic: expect.stringMatching(/^the A2A agent rejected the task/),
    });
    expect((await runOn("input")).run.result).toMatchObject({
      stopReason: "error",
      diagnostic: expect.stringMatching(
        /asked for more input, which a one-shot child cannot give: need more input/,
      ),
    });
  });

  it("DELETE cancels the agent's task (CancelTask reaches it)", async () => {
    const provider = await registerA2a(AGENT_URL, AGENT_TOKEN);
    const parent = await createSession();
    const cancelsBefore = (await agentStats()).cancels;
    const { runId } = await startOneShot(parent.id, { provider, prompt: "hang" });
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${runId}`)).status).toBe(202);
    expect((await waitForRun(parent.id, runId, 3_000)).result.stopReason).toBe("aborted");
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "done",
    );
    expect((await agentStats()).cancels).toBe(cancelsBefore + 1);
  });

  it("a canceled task on the agent's side ends the run aborted", async () => {
    const provider = await registerA2a(AGENT_URL, AGENT_TOKEN);
    const parent = await createSession();
    const { runId } = await startOneShot(parent.id, { provider, prompt: "hang" });
    const { remote_id: taskId } = await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    // someone else cancels the task at the agent
    const cancel = await fetch(`${AGENT_URL}/a2a`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${AGENT_TOKEN}`,
        "A2A-Version": "1.0",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "CancelTask", params: { id: taskId } }),
    });
    expect(cancel.status).toBe(200);
    const run = await waitForRun(parent.id, runId, 20_000);
    expect(run.result).toMatchObject({
      stopReason: "aborted",
      diagnostic: expect.stringMatching(/^the A2A agent canceled the task/),
    });
  });

  it("a wrong token is refused: the run ends error without the token in any diagnostic", async () => {
    const wrong = "definitely-the-wrong-a2a-token";
    const { parent, run } = await runOn("echo: never", wrong);
    expect(run.result.stopReason).toBe("error");
    expect(run.result.diagnostic).toMatch(/^the A2A agent did not accept the task: HTTP 401/);
    expect(JSON.stringify(run)).not.toContain(wrong);
    await expectNoCredential(parent.id, [wrong, AGENT_TOKEN]);
  });

  it("an unreachable agent is retried, then ends error after the deadline", async () => {
    const provider = await registerA2a("http://127.0.0.1:9", AGENT_TOKEN);
    const parent = await createSession();
    const { runId } = await startOneShot(parent.id, { provider, prompt: "echo: nobody home" });
    const row = await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.attempts >= 1,
    );
    expect(row.last_error).toMatch(/^accept the task: no answer/);
    vi.setSystemTime(Date.now() + 601_000); // REMOTE_DEADLINE_SECONDS is 600 in wrangler.toml
    await runDurableObjectAlarm(stub(parent.id));
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toMatchObject({
      output: [],
      stopReason: "error",
      diagnostic: expect.stringMatching(
        /^the A2A agent gave no successful answer for 600 s \(last: accept the task: no answer/,
      ),
    });
    expect(JSON.stringify(run)).not.toContain(AGENT_TOKEN);
  });
});
