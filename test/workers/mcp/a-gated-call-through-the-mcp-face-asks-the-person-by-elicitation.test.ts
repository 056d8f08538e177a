import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { api, createSession, workerFetch } from "../../support/api";
import { allEvents, ofType } from "../../support/logs";

/**
 * Where the MCP client declares the elicitation capability (form mode, protocol revision
 * 2026-07-28, on which the face's stateless requests carry the question as an `input_required`
 * result and the client retries the call with the answer), a gated call through the face asks the
 * person at the client with a yes/no form, and that answer decides its approval (README
 * "Approvals"): `approval/decided` is `by` the session, `via` "mcp-elicitation". Yes runs the call
 * once; no answers `denied`, with the reason the person gave.
 */

type Answer = { action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> };

/** The official client on the per-request revision, with a person who answers `answer`. */
async function personAtClient(id: string, token: string, answer: Answer) {
  const questions: { message: string; requestedSchema: unknown }[] = [];
  const client = new Client(
    { name: "elicitation-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", async (request) => {
    const params = request.params as { message: string; requestedSchema: unknown };
    questions.push({ message: params.message, requestedSchema: params.requestedSchema });
    return answer as never;
  });
  const transport = new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
    fetch: (input, init) => workerFetch(new Request(input, init)),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return { client, questions };
}

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

describe("a gated call through the MCP face, with a client that can ask its person", () => {
  it("asks with a yes/no form; yes decides the approval and the call runs once", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const { client, questions } = await personAtClient(id, token, {
      action: "accept",
      content: { approve: true, reason: "looks fine" },
    });
    const result = await client.callTool({ name: "echo", arguments: { text: "ping" } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("ping");
    expect(questions).toHaveLength(1);
    expect(questions[0]!.message).toContain("echo");
    expect(questions[0]!.requestedSchema).toMatchObject({
      type: "object",
      properties: { approve: { type: "boolean" }, reason: { type: "string" } },
      required: ["approve"],
    });
    const events = await allEvents(id);
    const [asked] = ofType(events, "approval/requested");
    expect(asked!.data).toMatchObject({ sessionId: id, tool: "echo", mcpFace: true });
    expect(ofType(events, "approval/decided").map((e) => e.data)).toEqual([
      {
        approvalId: (asked!.data as { approvalId: string }).approvalId,
        decision: "approve",
        reason: "looks fine",
        by: id,
        via: "mcp-elicitation",
      },
    ]);
    expect(ofType(events, "mcp/call")).toHaveLength(1);
    expect(ofType(events, "mcp/result").map((e) => e.data)).toMatchObject([{ name: "echo", isError: false }]);
    expect((await api("GET", `/v1/sessions/${id}/approvals`, { token })).body.approvals).toEqual([]);
    await client.close();
  });

  it("no, with a reason, answers the call denied with it; a declined form denies too", async () => {
    const { id, token } = await createSession({ requireApproval: ["echo"] });
    const said = await personAtClient(id, token, {
      action: "accept",
      content: { approve: false, reason: "not on a Friday" },
    });
    const denied = await said.client.callTool({ name: "echo", arguments: { text: "ping" } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toBe("denied: not on a Friday");
    await said.client.close();

    const declined = await personAtClient(id, token, { action: "decline" });
    const refused = await declined.client.callTool({ name: "echo", arguments: { text: "pong" } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^denied: /);
    await declined.client.close();
    const decided = ofType(await allEvents(id), "approval/decided").map((e) => e.data);
    expect(decided).toMatchObject([
      { decision: "deny", reason: "not on a Friday", by: id, via: "mcp-elicitation" },
      { decision: "deny", by: id, via: "mcp-elicitation" },
    ]);
    expect(
      ofType(await allEvents(id), "mcp/result").every((e) => (e.data as { isError: boolean }).isError),
    ).toBe(true);
  });
});
