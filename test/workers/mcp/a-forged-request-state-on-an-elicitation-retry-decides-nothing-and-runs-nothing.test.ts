import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { api, createSession, workerFetch } from "../../support/api";
import { allEvents, ofType, waitForEvents } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

/**
 * The retried call that carries a person's answer to the face's elicitation names its question
 * with `requestState` (`<approvalId>.<secret>`, README "Approvals"). A client that forges it (a
 * wrong secret, the id of another approval, the state of a question asked about another call)
 * is refused INVALID_REQUEST: no approval is decided, and nothing runs. The official client makes
 * the calls and answers yes; the forgery is made on the wire, in the retried request's body.
 */

type Params = { name: string; arguments?: Record<string, unknown>; requestState?: string };

/** The official client on the per-request revision, whose person says yes, with its retries rewritten by `forge`. */
async function forgingClient(id: string, token: string, forge: (params: Params) => Params) {
  const client = new Client(
    { name: "forging-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", async () => ({
    action: "accept",
    content: { approve: true },
  }));
  const transport = new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method !== "POST") return workerFetch(request);
      const body = (await request.clone().json()) as { method?: string; params?: Params };
      if (body.method !== "tools/call" || body.params?.requestState === undefined)
        return workerFetch(request);
      const forged = forge(body.params);
      // a forged tool name is named in the request's header too, as the revision requires
      const headers = new Headers(request.headers);
      if (headers.has("mcp-name")) headers.set("mcp-name", forged.name);
      return workerFetch(
        new Request(request, { headers, body: JSON.stringify({ ...body, params: forged }) }),
      );
    },
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

/** What a refused retry leaves: the approvals still pending, none decided, no echo ran. */
async function nothingDecidedNorRun(id: string, token: string, pending: number) {
  const events = await allEvents(id);
  expect(ofType(events, "approval/decided")).toEqual([]);
  expect(ofType(events, "tool/result")).toEqual([]);
  expect(ofType(events, "mcp/result").filter((e) => !(e.data as { isError: boolean }).isError)).toEqual([]);
  expect((await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals).toHaveLength(pending);
}

describe("a forged requestState on the elicitation's retry", () => {
  it("with a wrong secret: refused, nothing decided, nothing run", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const client = await forgingClient(id, token, (params) => ({
      ...params,
      requestState: `${params.requestState!.split(".")[0]}.${"0".repeat(32)}`,
    }));
    const answer = await client.callTool({ name: "echo", arguments: { text: "ping" } });
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toMatch(/^INVALID_REQUEST: /);
    await nothingDecidedNorRun(id, token, 1);
    await client.close();
  });

  it("naming another approval (the model's) with its own secret: refused, that approval still pending", async () => {
    const { id, token } = await createSession({ model: "scripted", requireApproval: ["echo"] });
    const sent = await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script({ call: [toolCall("echo", { text: "ping" })] }, { say: "finished" }) },
    });
    expect(sent.status).toBe(202);
    const log = await waitForEvents(id, (es) => ofType(es, "approval/requested").length === 1);
    const { approvalId: models } = ofType(log, "approval/requested")[0]!.data as { approvalId: string };
    const client = await forgingClient(id, token, (params) => ({
      ...params,
      requestState: `${models}.${params.requestState!.split(".")[1]}`,
    }));
    const answer = await client.callTool({ name: "echo", arguments: { text: "ping" } });
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toMatch(/^INVALID_REQUEST: /);
    await nothingDecidedNorRun(id, token, 2);
    await client.close();
  });

  it("retried with other arguments, or as another tool: refused, nothing decided, nothing run", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo", "list_agents"] });
    const other = await forgingClient(id, token, (params) => ({
      ...params,
      arguments: { text: "something else" },
    }));
    const changed = await other.callTool({ name: "echo", arguments: { text: "ping" } });
    expect(changed.isError).toBe(true);
    expect(textOf(changed)).toMatch(/^INVALID_REQUEST: /);
    await other.close();
    const renamed = await forgingClient(id, token, (params) => ({
      ...params,
      name: "echo",
      arguments: { text: "ping" },
    }));
    const asAnother = await renamed.callTool({ name: "list_agents", arguments: {} });
    expect(asAnother.isError).toBe(true);
    expect(textOf(asAnother)).toMatch(/^INVALID_REQUEST: /);
    await renamed.close();
    await nothingDecidedNorRun(id, token, 2);
  });
});
