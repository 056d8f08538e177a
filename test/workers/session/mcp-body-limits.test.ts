import { describe, expect, it } from "vitest";
import { createSession } from "../../support/api";
import { tablesHash } from "../../support/objects";
import { jsonRpcAnswer, mcpPath, postJsonRpc } from "../../support/json-rpc";

/**
 * The MCP face reads its body with the same limits as every route (README, Security and limits: "The MCP face
 * reads its body..."): 256 KiB, 128 levels of nesting. The attack: a body one byte over the size
 * limit, or one level too deep, sent to `POST /v1/sessions/:id/mcp`, which once forwarded its body
 * untouched (a 3 MiB body answered 200). Refused with the documented status and code before the
 * MCP layer reads it, nothing stored; exactly at each limit the request still reaches MCP.
 */

const LIMIT = 256 * 1024;

/** One POST to the session's MCP endpoint, as a 2025-era MCP client sends it. */
const mcp = (id: string, body: BodyInit, headers: Record<string, string> = {}): Promise<Response> =>
  postJsonRpc(mcpPath(id), body, { headers });

const answerOf = jsonRpcAnswer;

/** A `tools/list` request whose JSON-RPC id is a string making the whole body exactly `bytes` long. */
function listOfSize(bytes: number): string {
  const shape = (id: string) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: {} });
  const body = shape("i".repeat(bytes - shape("").length));
  expect(new TextEncoder().encode(body).byteLength).toBe(bytes);
  return body;
}

/** A `tools/list` request nesting exactly `levels` deep (the request, its params, their `_meta`, arrays). */
function listNested(levels: number): string {
  const arrays = levels - 3;
  return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"n":${"[".repeat(arrays)}${"]".repeat(arrays)}}}}`;
}

/** A body of `bytes` bytes that declares no length (a chunked upload). */
function streamOf(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

/** The status and the error envelope's code of an answer (`undefined` when it has none). */
async function refusal(response: Response): Promise<{ status: number; code: string | undefined }> {
  const text = await response.text();
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code as string | undefined;
  } catch {
    code = undefined; // not the envelope: an MCP answer
  }
  return { status: response.status, code: typeof code === "string" ? code : undefined };
}

describe("the MCP face's body limits (README, Security and limits)", () => {
  it("refuses 256 KiB + 1 byte with 413 PAYLOAD_TOO_LARGE, declared or streamed, storing nothing", async () => {
    const { id } = await createSession();
    const before = await tablesHash(id);
    expect(await refusal(await mcp(id, listOfSize(LIMIT + 1)))).toEqual({
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    });
    // a chunked body that never says its length is cut off at the limit too
    expect(await refusal(await mcp(id, streamOf(LIMIT + 16 * 1024)))).toEqual({
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    });
    // the finding as reported: a 3 MiB tools/call
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "x".repeat(3 * 1024 * 1024) } },
    });
    expect(await refusal(await mcp(id, huge))).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE" });
    expect(await tablesHash(id)).toBe(before);
  });

  it("refuses JSON nested 129 levels deep with 400 INVALID_REQUEST, storing nothing", async () => {
    const { id } = await createSession();
    const before = await tablesHash(id);
    const refused = await mcp(id, listNested(129));
    expect(await refusal(refused)).toEqual({ status: 400, code: "INVALID_REQUEST" });
    const deeper = await mcp(id, `[${listNested(10_000)}]`);
    expect(await refusal(deeper)).toEqual({ status: 400, code: "INVALID_REQUEST" });
    expect(await tablesHash(id)).toBe(before);
  });

  it("hands a body of exactly 256 KiB, and one nested exactly 128 levels, to MCP, which answers it", async () => {
    const { id } = await createSession();
    const body = listOfSize(LIMIT);
    const atSize = await mcp(id, body);
    expect(atSize.status).toBe(200);
    const answer = await answerOf(atSize);
    // the JSON-RPC answer names the request's whole 256 KiB id: MCP read every byte
    expect(answer.id).toBe(JSON.parse(body).id);
    expect(answer.result.tools.map((t: { name: string }) => t.name)).toContain("echo");

    const atDepth = await mcp(id, listNested(128));
    expect(atDepth.status).toBe(200);
    const deep = await answerOf(atDepth);
    expect(deep.id).toBe(1);
    expect(deep.result.tools.map((t: { name: string }) => t.name)).toContain("echo");
  });

  it("leaves text that is not JSON to MCP, which answers with its own parse error", async () => {
    const { id } = await createSession();
    const malformed = await mcp(id, "{not json");
    expect(malformed.status).toBeLessThan(500);
    expect((await answerOf(malformed)).error.code).toBe(-32700);
  });
});
