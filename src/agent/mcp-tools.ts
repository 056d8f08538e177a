import type { Client } from "@modelcontextprotocol/client";
import * as z from "zod";
import type { McpServerSpec } from "../contract/session";
import { outboundFetch } from "../platform/outbound-fetch";
import type { SessionHost } from "./host";
import type { OfferedTool, ToolSource } from "./tool-source";
import { traceparentOf } from "../trace/traceparent";
import { text, type Tool, type ToolOutcome } from "./tools";

/**
 * The tools of a session's MCP servers (`mcpServers`, docs/semantics.md §15), as one tool
 * source: a server `calc`'s tool `add` is `mcp__calc__add` to the model, with the server's input
 * schema, under the session's tool filter. Tool lists are fetched lazily over Streamable HTTP (the
 * official SDK's client) and kept for a minute. A server that cannot be listed (down, refusing its
 * token, a protocol error) keeps offering what it last listed; one never listed is offered as a
 * single stand-in, `mcp__<server>__unavailable`, whose description and error result say why, so
 * the model learns its tools are missing instead of never hearing of them. Each failure streak is
 * reported once (`unavailable`: the session logs `mcp/server-unavailable`). A call that fails
 * (server down, protocol error, timeout, the tool's own error) is an error tool result with a short
 * diagnostic, and the turn goes on. A server's token is sent as `Authorization: Bearer` and is
 * never part of any result, description, diagnostic or log. Requests go through `outboundFetch`
 * (the outbound rule on every request, redirects followed on the server's origin only), so the
 * token never leaves that origin.
 */

/** `mcp__<server>__<tool>`: what the model calls a server's tool (model APIs allow 64 characters). */
export const MCP_TOOL_NAME = /^mcp__([a-z0-9_-]{1,32})__([A-Za-z0-9_-]+)$/;

const LIST_TTL_MS = 60_000;
const CALL_TIMEOUT_MS = 60_000;
const LIST_TIMEOUT_MS = 10_000;
const DIAGNOSTIC_CHARS = 300;

/** The stand-in a server that cannot be listed is offered as: `mcp__<server>__unavailable`. */
export const UNAVAILABLE_TOOL = "unavailable";

interface Listed {
  at: number;
  tools: { name: string; description: string; inputSchema: Record<string, unknown> }[];
}

/** A server that could not be listed: its name and a short diagnostic free of its token. */
export interface McpServerUnavailable {
  server: string;
  error: string;
}

export interface McpToolSourceOptions {
  /** Loads the official MCP client SDK (the deployment's `mcp` protocol): on a session's first server. */
  sdk: () => Promise<typeof import("@modelcontextprotocol/client")>;
  fetch?: typeof fetch;
  /** Told once per failure streak of a server (again only after it has been listed since). */
  unavailable?: (failure: McpServerUnavailable) => void;
}

export class McpToolSource implements ToolSource<SessionHost> {
  readonly name = "mcp";
  /** Listings per server (by name, url and token: a child with another token lists again). */
  readonly #listings = new Map<string, Listed>();
  /** Servers whose latest listing failed, with its diagnostic (same keys as the listings). */
  readonly #failing = new Map<string, string>();
  readonly #fetch: typeof fetch;
  readonly #unavailable: (failure: McpServerUnavailable) => void;
  readonly #sdk: McpToolSourceOptions["sdk"];

  constructor(options: McpToolSourceOptions) {
    this.#sdk = options.sdk;
    this.#fetch = options.fetch ?? ((input, init) => outboundFetch(input, init));
    this.#unavailable = options.unavailable ?? (() => {});
  }

  knows(tool: string): boolean {
    return MCP_TOOL_NAME.test(tool) && tool.length <= 64;
  }

  async offer(header: { options: { mcpServers?: McpServerSpec[] } }): Promise<OfferedTool<SessionHost>[]> {
    const servers = header.options.mcpServers ?? [];
    const lists = await Promise.all(servers.map((server) => this.#list(server)));
    const offered: OfferedTool<SessionHost>[] = [];
    for (const [i, server] of servers.entries()) {
      const listed = lists[i];
      if (listed?.failure !== undefined && listed.tools.length === 0) {
        offered.push({ tool: this.#standIn(server, listed.failure) });
        continue;
      }
      for (const tool of listed?.tools ?? []) {
        const name = `mcp__${server.name}__${tool.name}`;
        if (!this.knows(name)) continue; // a name no model API accepts
        offered.push({ tool: this.#tool(server, name, tool) });
      }
    }
    return offered;
  }

  /** The server's tools (fresh, or kept a minute); on failure what it last listed, and why not now. */
  async #list(server: McpServerSpec): Promise<{ tools: Listed["tools"]; failure?: string }> {
    const key = cacheKey(server);
    const cached = this.#listings.get(key);
    if (cached && Date.now() - cached.at < LIST_TTL_MS) return cached;
    try {
      const listed = await this.#withClient(
        server,
        AbortSignal.timeout(LIST_TIMEOUT_MS),
        async (client, signal) => {
          const result = await client.listTools(undefined, { signal, timeout: LIST_TIMEOUT_MS });
          return result.tools.map((t) => ({
            name: t.name,
            description: (t.description ?? t.title ?? t.name).slice(0, 2000),
            inputSchema: (t.inputSchema ?? { type: "object" }) as Record<string, unknown>,
          }));
        },
      );
      const entry = { at: Date.now(), tools: listed };
      this.#listings.set(key, entry);
      this.#failing.delete(key);
      return entry;
    } catch (error) {
      // unreachable for now: offer what was last listed, if anything (a call re-checks)
      const failure = diagnostic(error, server);
      if (!this.#failing.has(key)) this.#unavailable({ server: server.name, error: failure });
      this.#failing.set(key, failure);
      return { tools: cached?.tools ?? [], failure };
    }
  }

  /** What a server never listed is offered as: calling it answers why its tools are missing. */
  #standIn(server: McpServerSpec, failure: string): Tool<unknown, SessionHost> {
    const why = `MCP server ${server.name} is unavailable: ${failure}`;
    return {
      name: `mcp__${server.name}__${UNAVAILABLE_TOOL}`,
      description: `${why}. Its tools are not offered until it answers; calling this tool returns that error.`,
      schema: z.unknown(),
      parameters: { type: "object", properties: {} },
      run: () => text(`Error: ${why}`, true),
    };
  }

  #tool(
    server: McpServerSpec,
    name: string,
    tool: { name: string; description: string; inputSchema: Record<string, unknown> },
  ): Tool<unknown, SessionHost> {
    return {
      name,
      description: tool.description,
      // the server validates its own arguments; the model is shown the server's schema
      schema: z.unknown(),
      parameters: tool.inputSchema,
      timeoutMs: CALL_TIMEOUT_MS + 5_000,
      run: async (args, context): Promise<ToolOutcome> => {
        const signal = AbortSignal.any([context.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
        const traceparent = traceparentOf(context.trace);
        try {
          const result = await this.#withClient(server, signal, (client) =>
            client.callTool(
              {
                name: tool.name,
                arguments: (args ?? {}) as Record<string, unknown>,
                // the call's span: the server's work may join the session's trace (README "Traces")
                ...(traceparent ? { _meta: { traceparent } } : {}),
              },
              { signal, timeout: CALL_TIMEOUT_MS },
            ),
          );
          const content = ((result.content ?? []) as { type: string; text?: string }[]).map((block) =>
            block.type === "text" ? (block.text ?? "") : `[${block.type} omitted]`,
          );
          const joined = content.join("\n");
          return result.isError === true ? text(`Error: ${joined || "the tool failed"}`, true) : text(joined);
        } catch (error) {
          return text(`Error: MCP server ${server.name}: ${diagnostic(error, server)}`, true);
        }
      },
    };
  }

  /** One connection to `server` for `work` (stateless use: the SDK's handshake, the call, close). */
  async #withClient<T>(
    server: McpServerSpec,
    signal: AbortSignal,
    work: (client: Client, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    // loaded on a session's first MCP server (its schemas cost a Worker's start that never uses one)
    const { Client, StreamableHTTPClientTransport } = await this.#sdk();
    const client = new Client({ name: "subagents-edge", version: "0.1.0" });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: (input, init) => this.#fetch(input, { ...init, signal }),
      requestInit: server.token ? { headers: { authorization: `Bearer ${server.token}` } } : {},
    });
    // failures surface as the call's own rejection; the SDK's error callbacks would only repeat them
    client.onerror = () => {};
    transport.onerror = () => {};
    try {
      await client.connect(transport, { signal, timeout: LIST_TIMEOUT_MS });
      return await work(client, signal);
    } finally {
      await client.close().catch(() => {});
    }
  }
}

function cacheKey(server: McpServerSpec): string {
  return JSON.stringify([server.name, server.url, server.token ?? ""]);
}

/** A failure in a few words, with the server's token (and anything that looks like one) removed. */
function diagnostic(error: unknown, server: McpServerSpec): string {
  let message = error instanceof Error ? error.message : String(error);
  // the SDK's HTTP errors keep the status beside the message (a refused token: 401, 403)
  const status = (error as { data?: { status?: unknown } } | null)?.data?.status;
  if (typeof status === "number" && !message.includes(String(status))) message = `HTTP ${status}: ${message}`;
  if (server.token) message = message.split(server.token).join("[redacted]");
  message = message.replace(/bearer\s+[^\s"',}]+/gi, "Bearer [redacted]");
  return message.slice(0, DIAGNOSTIC_CHARS) || "the call failed";
}
