import {
  createMcpHandler,
  type McpHttpHandler,
  McpServer,
  type StandardSchemaWithJSON,
} from "@modelcontextprotocol/server";
import type { SessionHost } from "../../src/agent/host";
import { executeTool, type Tool, toolSpecs } from "../../src/agent/tools";
import { textOf } from "../../src/contract/content";
import { renderForeground } from "../../src/core/run-rendering";
import { logRefusal } from "../../src/core/quotas";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import type { SessionContext } from "./session-context";

/**
 * A session's tools for any MCP client (docs/semantics.md §14): `POST /v1/sessions/:id/mcp`
 * (Streamable HTTP, on the official SDK's web-standard handler, which serves both the 2025
 * `initialize` revisions, statelessly, and the current per-request revision). The Worker has
 * authenticated the caller before a byte of MCP is read.
 *
 * An MCP client is one more caller of the session's tools, with the session's authority: the
 * tools its model sees, under its tool filter, minus the child-only answering tools. A
 * foreground `subagent` call answers with the child's result (progress notifications while it
 * runs, when the client sent a progress token); a background one answers at once, and nothing
 * depends on the connection afterwards. Every call and its result are in the log as `mcp/call`
 * and `mcp/result`, so a transcript tells them apart from the model's own calls.
 */

/** Tools a child answers its parent with: not a caller's to use. */
const CHILD_ONLY = new Set(["report", "structured_output"]);
/** How often a foreground call waits for its run before it reports progress again. */
const PROGRESS_EVERY_MS = 5_000;
/** A foreground call's longest wait (its child keeps running after; task_output reads it later). */
const FOREGROUND_LIMIT_MS = 10 * 60_000;

export class McpFace {
  readonly #ctx: SessionContext;
  readonly #host: SessionHost;
  readonly #runs: OneShotRuns;
  #handler: McpHttpHandler | undefined;

  constructor(ctx: SessionContext, host: SessionHost, runs: OneShotRuns) {
    this.#ctx = ctx;
    this.#host = host;
    this.#runs = runs;
  }

  handle(request: Request): Promise<Response> {
    this.#handler ??= createMcpHandler(() => this.#server(), { legacy: "stateless" });
    return this.#handler.fetch(request);
  }

  async #server(): Promise<McpServer> {
    const server = new McpServer({ name: "subagents-edge session", version: "0.1.0" });
    const tools = await this.#ctx.tools.visible(this.#ctx.header());
    const specs = toolSpecs(tools);
    for (const [i, tool] of tools.entries()) {
      if (CHILD_ONLY.has(tool.name)) continue;
      const parameters = specs[i]?.parameters ?? { type: "object" };
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: shownAs(parameters, tool) as never },
        (async (args: unknown, extra: McpCallContext) => this.#call(tool, tools, args, extra)) as never,
      );
    }
    return server;
  }

  async #call(
    tool: Tool<unknown, SessionHost>,
    tools: readonly Tool<unknown, SessionHost>[],
    args: unknown,
    extra: McpCallContext,
  ): Promise<{ content: { type: "text"; text: string }[]; isError?: boolean }> {
    const { stores } = this.#ctx;
    // a log at its quota takes no new work, and a refused call writes nothing (MAX_LOG_BYTES)
    const full = logRefusal(stores.log.bytes(), this.#ctx.limits.logCap);
    if (full) return { content: [{ type: "text", text: `${full.code}: ${full.message}` }], isError: true };
    const callId = `mcp_${crypto.randomUUID().replaceAll("-", "")}`;
    const callKey = `mcp:${callId}`;
    stores.transact(() =>
      stores.log.append("mcp/call", { callId, name: tool.name, args: (args ?? {}) as never }),
    );
    const outcome = await executeTool(
      tools,
      tool.name,
      args,
      { sessionId: this.#ctx.header()?.id ?? "", callKey, toolCallId: callId, signal: extra.mcpReq.signal },
      this.#host,
    );
    let text: string;
    let isError: boolean;
    if ("deferred" in outcome) {
      ({ text, isError } = await this.#foreground(callKey, extra));
    } else {
      text = textOf(outcome.content);
      isError = outcome.isError === true;
    }
    stores.transact(() =>
      stores.log.append("mcp/result", {
        callId,
        name: tool.name,
        content: [{ type: "text", text }],
        isError,
      }),
    );
    return isError
      ? { content: [{ type: "text", text }], isError: true }
      : { content: [{ type: "text", text }] };
  }

  /** Waits for the run a foreground `subagent` call started, with progress while it runs. */
  async #foreground(callKey: string, extra: McpCallContext): Promise<{ text: string; isError: boolean }> {
    const run = this.#ctx.stores.runs.byCallKey(callKey);
    if (!run) return { text: "Error: the subagent did not start", isError: true };
    const token = extra.mcpReq._meta?.progressToken;
    const deadline = Date.now() + FOREGROUND_LIMIT_MS;
    for (let progress = 0; Date.now() < deadline && !extra.mcpReq.signal.aborted; progress++) {
      const settled = await this.#runs.waitFor(run.runId, PROGRESS_EVERY_MS);
      if (settled?.state === "settled" && settled.result) return renderForeground(settled.result);
      if (token !== undefined)
        await extra.mcpReq
          .notify({
            method: "notifications/progress",
            params: {
              progressToken: token,
              progress: progress + 1,
              message: `subagent ${run.childId} is running`,
            },
          })
          .catch(() => {});
    }
    return {
      text: `the subagent ${run.childId} is still running; read it later with task_output or list_agents`,
      isError: false,
    };
  }
}

/**
 * A tool's input schema as the SDK lists it: exactly the JSON schema the model is shown (a remote
 * MCP server's tool carries its server's JSON schema beside a placeholder zod schema, which the
 * SDK would list as an empty object). Arguments are checked by the tool's own zod schema (a
 * remote tool's by its server).
 */
function shownAs(
  parameters: Record<string, unknown>,
  tool: Tool<unknown, SessionHost>,
): StandardSchemaWithJSON {
  return {
    "~standard": {
      version: 1,
      vendor: "subagents-edge",
      validate: (value) => tool.schema["~standard"].validate(value),
      jsonSchema: { input: () => parameters, output: () => parameters },
    },
  };
}

/** The part of the SDK's handler context a tool call uses. */
interface McpCallContext {
  mcpReq: {
    signal: AbortSignal;
    _meta?: { progressToken?: string | number };
    notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  };
}
