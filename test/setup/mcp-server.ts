import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { nodeHttp } from "./node-http.ts";

/**
 * A real MCP server for the tests, built on the official SDK's server side, served over HTTP by
 * Node (vitest's globalSetup), reached by the Worker under test through its ordinary outbound
 * fetch. It answers only with the bearer token below (401 otherwise), and offers:
 *
 *   add {a, b}        -> "<a + b>"
 *   shout {text}      -> the text in capitals
 *   fails {}          -> an error result ("the tool failed on purpose")
 *   explode {}        -> throws (the SDK turns it into an error result)
 *
 * GET /__calls answers how many tool calls it served, per tool (for caching and inheritance checks),
 * and `traceparents`: the `_meta.traceparent` of each call that carried one, in order.
 */

export const MCP_TEST_TOKEN = "mcp-test-token-4f1c9a";

export interface McpTestServer {
  url: string;
  token: string;
  close(): Promise<void>;
}

export async function startMcpServer(): Promise<McpTestServer> {
  const http = await nodeHttp();
  const calls: Record<string, number> = {};
  const traceparents: { tool: string; traceparent: string }[] = [];
  const counted = (name: string, extra?: { mcpReq?: { _meta?: Record<string, unknown> } }) => {
    calls[name] = (calls[name] ?? 0) + 1;
    const traceparent = extra?.mcpReq?._meta?.traceparent;
    if (typeof traceparent === "string") traceparents.push({ tool: name, traceparent });
  };
  const factory = () => {
    const server = new McpServer({ name: "test-tools", version: "1.0.0" });
    server.registerTool(
      "add",
      { description: "Adds two numbers.", inputSchema: z.object({ a: z.number(), b: z.number() }) },
      async ({ a, b }, extra) => {
        counted("add", extra as never);
        return { content: [{ type: "text", text: String(a + b) }] };
      },
    );
    server.registerTool(
      "shout",
      { description: "Answers the text in capitals.", inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => {
        counted("shout");
        return { content: [{ type: "text", text: text.toUpperCase() }] };
      },
    );
    server.registerTool(
      "fails",
      { description: "Fails on purpose.", inputSchema: z.object({}) },
      async () => {
        counted("fails");
        return { content: [{ type: "text", text: "the tool failed on purpose" }], isError: true };
      },
    );
    server.registerTool("explode", { description: "Throws.", inputSchema: z.object({}) }, async () => {
      counted("explode");
      throw new Error("boom inside the MCP tool");
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: "stateless" });

  const server = http.createServer((req, res) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/__calls") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ...calls, traceparents }));
        return;
      }
      if (req.headers.authorization !== `Bearer ${MCP_TEST_TOKEN}`) {
        res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
        res.end(JSON.stringify({ error: "unauthorized" }));
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === "string") headers.set(name, value);
      const body =
        chunks.length > 0 ? new Blob(chunks as unknown as ConstructorParameters<typeof Blob>[0]) : undefined;
      const response = await handler.fetch(
        new Request(url, { method: req.method ?? "GET", headers, ...(body ? { body } : {}) }),
      );
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        out[name] = value;
      });
      res.writeHead(response.status, out);
      if (response.body)
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the MCP test server has no port");
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    token: MCP_TEST_TOKEN,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    mcpServer: { url: string; token: string };
  }
}

/** vitest `globalSetup`: starts the server on a free loopback port and provides its address. */
export default async function setup(project: {
  provide(key: "mcpServer", value: { url: string; token: string }): void;
}): Promise<() => Promise<void>> {
  const server = await startMcpServer();
  project.provide("mcpServer", { url: server.url, token: server.token });
  return () => server.close();
}
