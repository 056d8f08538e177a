import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpNet, installAcpAgent } from "../../support/acp-agent";
import { SubagentsClient } from "../../../src/client";
import {
  ADMIN,
  api,
  createSession,
  expectError,
  putProvider,
  startOneShot,
  waitForRun,
  workerFetch,
} from "../../support/api";
import { allEvents, ofType, waitForEvents } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

/**
 * Approve answers an ACP agent's permission request with its allow-once option and nothing
 * broader (README "Approvals"): an agent that offers no allow-once option says so in the pending
 * approval (`scopes`), a plain approve of it is refused `SCOPE_NOT_OFFERED` and decides nothing,
 * and only a decision with `"scope": "always"` picks an allow-always option. Deny answers the
 * reject option of its scope, else the other reject option. What the agent received is read
 * from the agent's own log (the ACP SDK's agent side, test/support/acp-agent.ts).
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

/** A run whose agent asks permission to write `path`, offering one option of each of `kinds`. */
async function asking(kinds: string[]): Promise<{ parent: string; runId: string; path: string }> {
  const provider = await acpProvider();
  const parent = (await createSession()).id;
  const path = `/tmp/${crypto.randomUUID().slice(0, 8)}.txt`;
  const { runId } = await startOneShot(parent, { provider, prompt: `permit ${kinds.join(",")} ${path}` });
  await waitForEvents(parent, (es) => ofType(es, "approval/requested").length === 1);
  return { parent, runId, path };
}

async function pending(parent: string): Promise<any[]> {
  const res = await api("GET", `/v1/sessions/${parent}/approvals`);
  expect(res.status).toBe(200);
  return res.body.approvals;
}

function decide(parent: string, approvalId: string, body: Record<string, unknown>) {
  return api("POST", `/v1/sessions/${parent}/approvals/${approvalId}`, { body });
}

/** The Worker's fetch with the signature the client SDK expects. */
const sdkFetch = (input: string, init: RequestInit) => workerFetch(new Request(input, init));

/** What the agent was answered for its request to write `path`. */
function answered(path: string): unknown[] {
  return net.connections
    .flatMap((c) => c.permissions)
    .filter((p) => p.toolCallId === `write-${path}`)
    .map((p) => p.outcome);
}

describe("approve answers an ACP agent's allow-once option and nothing broader", () => {
  it("an agent offering allow-once and allow-always gets allow-once from a plain approve", async () => {
    const { parent, runId, path } = await asking(["allow_always", "allow_once", "reject_once"]);
    const [approval] = await pending(parent);
    expect(approval.scopes).toEqual(["once", "always"]);
    expect((await decide(parent, approval.approvalId, { decision: "approve" })).status).toBe(200);
    expect((await waitForRun(parent, runId)).result.output).toEqual([
      { type: "text", text: "chose allow_once" },
    ]);
    expect(answered(path)).toEqual([{ outcome: "selected", optionId: "allow_once" }]);
  });

  it("an agent offering only allow-always is not answered by a plain approve, and is by scope always", async () => {
    const { parent, runId, path } = await asking(["allow_always", "reject_once"]);
    const [approval] = await pending(parent);
    const plain = await decide(parent, approval.approvalId, { decision: "approve" });
    expectError(plain, 409, "SCOPE_NOT_OFFERED", /always/);
    // the pending approval tells a person a plain approve cannot answer it
    expect(approval.scopes).toEqual(["always"]);
    const once = await decide(parent, approval.approvalId, { decision: "approve", scope: "once" });
    expectError(once, 409, "SCOPE_NOT_OFFERED");
    // nothing was decided: the approval still waits and the agent has heard nothing
    expect((await pending(parent)).map((a) => a.approvalId)).toEqual([approval.approvalId]);
    expect(ofType(await allEvents(parent), "approval/decided")).toEqual([]);
    expect(answered(path)).toEqual([]);

    const always = await decide(parent, approval.approvalId, { decision: "approve", scope: "always" });
    expect(always.status).toBe(200);
    expect(always.body).toEqual({ approvalId: approval.approvalId, decision: "approve" });
    expect((await waitForRun(parent, runId)).result.output).toEqual([
      { type: "text", text: "chose allow_always" },
    ]);
    expect(answered(path)).toEqual([{ outcome: "selected", optionId: "allow_always" }]);
    // the broader grant is on the record
    expect(ofType(await allEvents(parent), "approval/decided").map((e) => e.data)).toEqual([
      { approvalId: approval.approvalId, decision: "approve", scope: "always", by: "admin" },
    ]);
  });

  it("scope always picks allow-always where both are offered (the client SDK's decide)", async () => {
    const { parent, runId, path } = await asking(["allow_once", "allow_always", "reject_once"]);
    const [approval] = await pending(parent);
    const sdk = new SubagentsClient({ baseUrl: "http://example.com", token: ADMIN, fetch: sdkFetch });
    const decided = await sdk.decide(approval.approvalId, "approve", undefined, {
      sessionId: parent,
      scope: "always",
    });
    expect(decided).toEqual({ approvalId: approval.approvalId, decision: "approve" });
    await waitForRun(parent, runId);
    expect(answered(path)).toEqual([{ outcome: "selected", optionId: "allow_always" }]);
  });

  it("deny answers the reject option of its scope, else the other one: a denial never lets anything run", async () => {
    const both = await asking(["allow_once", "reject_always", "reject_once"]);
    const [first] = await pending(both.parent);
    expect((await decide(both.parent, first.approvalId, { decision: "deny" })).status).toBe(200);
    await waitForRun(both.parent, both.runId);
    expect(answered(both.path)).toEqual([{ outcome: "selected", optionId: "reject_once" }]);

    const onlyAlways = await asking(["allow_once", "reject_always"]);
    const [second] = await pending(onlyAlways.parent);
    expect((await decide(onlyAlways.parent, second.approvalId, { decision: "deny" })).status).toBe(200);
    await waitForRun(onlyAlways.parent, onlyAlways.runId);
    expect(answered(onlyAlways.path)).toEqual([{ outcome: "selected", optionId: "reject_always" }]);
  });

  it("a model's tool call offers approve once only: scope always on it is refused and decides nothing", async () => {
    const parent = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const content = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" });
    expect((await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content } })).status).toBe(202);
    await waitForEvents(parent.id, (es) => ofType(es, "approval/requested").length === 1);
    const [approval] = await pending(parent.id);
    expect(approval.scopes).toBeUndefined();
    const always = await decide(parent.id, approval.approvalId, { decision: "approve", scope: "always" });
    expectError(always, 409, "SCOPE_NOT_OFFERED", /once/);
    expect((await pending(parent.id)).map((a) => a.approvalId)).toEqual([approval.approvalId]);
    const once = await decide(parent.id, approval.approvalId, { decision: "approve", scope: "once" });
    expect(once.body).toEqual({ approvalId: approval.approvalId, decision: "approve" });
  });
});
