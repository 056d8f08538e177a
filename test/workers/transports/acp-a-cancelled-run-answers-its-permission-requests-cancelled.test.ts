import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpNet, installAcpAgent } from "../../support/acp-agent";
import { api, createSession, putProvider, startOneShot, waitForRun } from "../../support/api";
import { allEvents, eventually, ofType, waitForEvents } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

/**
 * ACP requires a client that cancels a prompt to answer every `session/request_permission` still
 * pending with the `cancelled` outcome. However the run is cancelled (its task cancelled, its
 * deadline passed, the turn that started it interrupted, its session deleted), the agent receives
 * that answer, and the approval that held the request is decided `deny` saying the run was
 * cancelled. What the agent received is read from its own log (the ACP SDK's agent side,
 * test/support/acp-agent.ts).
 */

let net: AcpNet;
beforeAll(() => {
  net = installAcpAgent();
});
afterAll(() => net.restore());

/** What the agent was answered for its request to write `path`. */
function answered(path: string): unknown[] {
  return net.connections
    .flatMap((c) => c.permissions)
    .filter((p) => p.toolCallId === `write-${path}`)
    .map((p) => p.outcome);
}

/** Waits for the agent's answer to its request to write `path` (its connection may outlive the run's end). */
function answer(path: string): Promise<unknown[]> {
  return eventually(
    async () => answered(path),
    (outcomes) => outcomes.length > 0,
    { what: `an answer to the agent's request to write ${path}` },
  );
}

interface Waiting {
  parent: string;
  path: string;
  /** The run, where the test started it itself. */
  runId?: string;
}

/** A session whose ACP run waits on its agent's permission request to write a fresh path. */
async function waiting(start: "run" | "deadline" | "foreground"): Promise<Waiting> {
  const provider = `acp-${crypto.randomUUID().slice(0, 8)}`;
  expect((await putProvider(provider, { kind: "acp", url: "wss://agent.acp.test/acp" })).status).toBe(201);
  const path = `/tmp/${crypto.randomUUID().slice(0, 8)}.txt`;
  const prompt = `permit allow_once,reject_once ${path}`;
  let out: Waiting;
  if (start === "foreground") {
    const parent = (await createSession({ model: "scripted", providers: [provider] })).id;
    const content = script(
      { call: [toolCall("subagent", { description: "write", prompt })] },
      { say: "done" },
    );
    expect((await api("POST", `/v1/sessions/${parent}/messages`, { body: { content } })).status).toBe(202);
    out = { parent, path };
  } else {
    const parent = (await createSession()).id;
    const body = start === "deadline" ? { provider, prompt, deadlineSeconds: 1 } : { provider, prompt };
    out = { parent, path, runId: (await startOneShot(parent, body)).runId };
  }
  await waitForEvents(out.parent, (es) => ofType(es, "approval/requested").length === 1);
  return out;
}

async function deniedBecauseCancelled(parent: string): Promise<void> {
  const events = await waitForEvents(parent, (es) => ofType(es, "approval/decided").length === 1);
  expect(ofType(events, "approval/decided")[0]!.data).toMatchObject({
    decision: "deny",
    reason: expect.stringMatching(/^the run was cancelled/),
    by: parent,
  });
  expect((await api("GET", `/v1/sessions/${parent}/approvals`)).body.approvals).toEqual([]);
}

describe("a cancelled ACP run answers its pending permission requests cancelled", () => {
  it("its task cancelled (DELETE …/runs/:runId)", async () => {
    const { parent, runId, path } = await waiting("run");
    expect((await api("DELETE", `/v1/sessions/${parent}/runs/${runId}`)).status).toBe(202);
    expect((await waitForRun(parent, runId!)).result.stopReason).toBe("aborted");
    expect(answered(path)).toEqual([{ outcome: "cancelled" }]);
    await deniedBecauseCancelled(parent);
  });

  it("its deadline passed", async () => {
    const { parent, runId, path } = await waiting("deadline");
    expect((await waitForRun(parent, runId!)).result.diagnostic).toMatch(/^deadline passed/);
    expect(await answer(path)).toEqual([{ outcome: "cancelled" }]);
    await deniedBecauseCancelled(parent);
  });

  it("the turn that started it interrupted", async () => {
    const { parent, path } = await waiting("foreground");
    expect((await api("POST", `/v1/sessions/${parent}/interrupt`)).status).toBe(202);
    expect(await answer(path)).toEqual([{ outcome: "cancelled" }]);
    await deniedBecauseCancelled(parent);
    const ends = ofType(await allEvents(parent), "subagent/end").map((e) => (e.data as any).stopReason);
    expect(ends).toEqual(["aborted"]);
  });

  it("its session deleted", async () => {
    const { parent, path } = await waiting("run");
    expect((await api("DELETE", `/v1/sessions/${parent}`)).status).toBe(202);
    expect(await answer(path)).toEqual([{ outcome: "cancelled" }]);
  });
});
