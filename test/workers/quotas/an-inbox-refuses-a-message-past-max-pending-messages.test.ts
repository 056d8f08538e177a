import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, createSession, followup, rpc, rpcFailure, sendMessage, startChild } from "../../support/api";
import { count, toolResults, waitForEvents } from "../../support/logs";
import { evict, registryStub, sqlRows, stub } from "../../support/objects";
import { expectRefused, MAX_PENDING_MESSAGES, queueBehind, stateOf } from "../../support/quotas";
import { script, toolCall } from "../../support/scripts";
import { jsonRpcAnswer, postJsonRpc } from "../../support/json-rpc";

/**
 * The inbox quota (src/core/quotas.ts, store/inbox.ts): a session holds at most
 * MAX_PENDING_MESSAGES (1000 in wrangler.toml) messages no turn has claimed yet. The next message,
 * over any face, is `429 INBOX_FULL` (with Retry-After) and stores nothing; a claim frees a place.
 */

const FULL = /already has 1000 pending messages \(MAX_PENDING_MESSAGES\)/;
/** A turn that thinks for a minute: the messages sent meanwhile wait in the inbox. */
const BUSY = script({ think: 60_000 }, { say: "done" });

async function pendingOf(id: string): Promise<number> {
  const [row] = await sqlRows<{ n: number }>(id, "SELECT count(*) AS n FROM inbox WHERE state = 'pending'");
  return row!.n;
}

/** A JSON-RPC POST (the A2A and MCP faces) with the admin token; the answer (JSON or its last SSE event). */
const post = async (path: string, body: unknown): Promise<any> =>
  jsonRpcAnswer(await postJsonRpc(path, JSON.stringify(body)));

describe("a session's pending messages past MAX_PENDING_MESSAGES", () => {
  it("takes the 1000th, refuses the 1001st with 429 INBOX_FULL over HTTP, RPC and A2A storing nothing, and takes one again once a turn claims one", async () => {
    const s = await createSession({ label: "inbox-quota" });
    // a turn that thinks for a minute, and 998 messages that wait for it (as if sent meanwhile)
    await queueBehind(s.id, [BUSY, ...Array.from({ length: MAX_PENDING_MESSAGES - 2 }, (_, i) => `m${i}`)]);
    await evict(s.id);
    await waitForEvents(s.id, (l) => count(l, "turn/start") === 1);
    await sendMessage(s.id, "the 999th");
    await sendMessage(s.id, "the 1000th", { idempotencyKey: "k-1000" });
    expect(await pendingOf(s.id)).toBe(MAX_PENDING_MESSAGES);

    const objects = [stub(s.id), registryStub()];
    const before = await stateOf(objects);
    const refused = await api("POST", `/v1/sessions/${s.id}/messages`, { body: { content: "one more" } });
    expectRefused(refused, 429, "INBOX_FULL", FULL);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await rpcFailure(() => rpc.send(s.id, { content: "one more" }))).toMatch(/^INBOX_FULL: /);
    const a2a = await post("/v1/a2a", {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "a2a-1001", taskId: s.id, role: "ROLE_USER", parts: [{ text: "x" }] } },
    });
    expect(a2a.error?.message).toMatch(FULL);
    // a retry of an accepted message is still answered with its id
    const replay = await api("POST", `/v1/sessions/${s.id}/messages`, {
      body: { content: "the 1000th", idempotencyKey: "k-1000" },
    });
    expect(replay.status).toBe(202);
    expect(await stateOf(objects)).toBe(before);

    // an interrupt parks the pending messages; the next message that finds them full is refused
    // but resumes them, and once a turn claimed one a message is taken again
    expect((await api("POST", `/v1/sessions/${s.id}/interrupt`)).status).toBe(202);
    expectRefused(
      await api("POST", `/v1/sessions/${s.id}/messages`, { body: { content: "one more" } }),
      429,
      "INBOX_FULL",
      FULL,
    );
    await waitForEvents(s.id, (l) => count(l, "agent/inbox/claimed") >= 2);
    await sendMessage(s.id, "taken again");
    await waitForEvents(s.id, (l) => count(l, "turn/end") === MAX_PENDING_MESSAGES + 2, {
      timeoutMs: 60_000,
    });
    expect(await pendingOf(s.id)).toBe(0);
  }, 120_000);

  it("refuses a follow-up to a child whose inbox is full: 429 INBOX_FULL over HTTP and RPC storing nothing, an error result for MCP's and the model's send_message", async () => {
    const parent = await createSession({ label: "inbox-quota-parent" });
    const { childId } = await startChild(parent.id, { prompt: BUSY });
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1);
    // 999 follow-ups wait for that turn (a hard restart of the objects re-runs its step), the 1000th is sent
    await queueBehind(
      childId,
      Array.from({ length: MAX_PENDING_MESSAGES - 1 }, (_, i) => `m${i}`),
    );
    await abortAllDurableObjects();
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1 && count(l, "turn/end") === 0);
    const res = await followup(parent.id, childId, "the 1000th");
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(await pendingOf(childId)).toBe(MAX_PENDING_MESSAGES);

    const objects = [stub(parent.id), stub(childId), registryStub()];
    const before = await stateOf(objects);
    expectRefused(await followup(parent.id, childId, "one more"), 429, "INBOX_FULL", FULL);
    expect(await rpcFailure(() => rpc.followup(parent.id, childId, { content: "one more" }))).toMatch(
      /^INBOX_FULL: /,
    );
    expect(await stateOf(objects)).toBe(before);

    const mcp = await post(`/v1/sessions/${parent.id}/mcp`, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "send_message", arguments: { subagent_id: childId, message: "hi" } },
    });
    expect(mcp.result).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(FULL) }] });
    expect(await pendingOf(childId)).toBe(MAX_PENDING_MESSAGES);

    await sendMessage(
      parent.id,
      script({ call: [toolCall("send_message", { subagent_id: childId, message: "hi" })] }),
    );
    const log = await waitForEvents(parent.id, (l) => count(l, "turn/end") === 1);
    expect(toolResults(log, "send_message")).toEqual([
      expect.objectContaining({ isError: true, text: expect.stringMatching(FULL) }),
    ]);
    expect(await pendingOf(childId)).toBe(MAX_PENDING_MESSAGES);
    expect((await api("POST", `/v1/sessions/${parent.id}/subagents/drain`, { body: {} })).status).toBe(200);
  }, 120_000);
});
