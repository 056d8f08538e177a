import { compact } from "../../src/core/compact";
import type { McpHttpHandler, McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { SessionHost } from "../../src/agent/host";
import { executeTool, type Tool, toolSpecs } from "../../src/agent/tools";
import { textOf } from "../../src/contract/content";
import { fail } from "../../src/contract/errors";
import { lazySchema } from "../../src/contract/lazy";
import { failure } from "../../src/contract/respond";
import { protocolMissing } from "../../src/protocols/protocol";
import { CALLER_HEADER, type Caller } from "../../src/contract/session";
import type { PendingApproval } from "../../src/contract/session-api";
import { DecideApprovalBody } from "../../src/contract/wire";
import { renderForeground } from "../../src/core/run-rendering";
import { logRefusal } from "../../src/core/quotas";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import type { ApprovalRow } from "../store/approvals";
import type { SessionContext } from "./session-context";
import { mcpCallSpan } from "../../src/trace/spans";
import { parseTraceparent } from "../../src/trace/traceparent";
import { pendingApproval } from "./session-view";

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
 * depends on the connection afterwards. Every call of a session tool and its result are in the log
 * as `mcp/call` and `mcp/result`, so a transcript tells them apart from the model's own calls.
 *
 * Two more tools are the caller's, not the model's (README "Approvals"): `pending_approvals`
 * lists the pending approvals of the session and its descendants, and `decide_approval` decides
 * one through the same path as `POST /v1/sessions/:id/approvals/:approvalId`, with the caller's
 * authority (`by` is the session, or `admin` for an admin caller). They are logged as what they
 * do (`approval/decided`), not as `mcp/call`. A foreground `subagent` call whose child (or a
 * session below it) waits on an approval says so in its progress notifications.
 */

/** Tools a child answers its parent with: not a caller's to use. */
const CHILD_ONLY = new Set(["report", "structured_output"]);

const SERVER_INFO = { name: "subagents-edge session", version: "0.1.0" };
/** How often a foreground call waits for its run before it reports progress again. */
const PROGRESS_EVERY_MS = 5_000;
/** A foreground call's longest wait (its child keeps running after; task_output reads it later). */
const FOREGROUND_LIMIT_MS = 10 * 60_000;
/** The approval tools' names (fixed); a session tool of the same name is not offered over MCP. */
const PENDING_APPROVALS = "pending_approvals";
const DECIDE_APPROVAL = "decide_approval";
/** `decide_approval`'s arguments: the HTTP route's body, with the approval's id beside it. */
const DecideApprovalArgs = lazySchema(() =>
  z.object({
    approval_id: z
      .string()
      .min(1)
      .describe("The approvalId of a pending approval, as pending_approvals lists it."),
    decision: DecideApprovalBody.shape.decision.describe(
      '"approve" runs the held call, once; "deny" answers it with an error result starting "denied".',
    ),
    reason: DecideApprovalBody.shape.reason.describe(
      "Why, in a few words; a denied call's result carries it to the model that made the call.",
    ),
  }),
);

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

  /**
   * Serves one MCP request; the session object has authorized its caller (in `CALLER_HEADER`) to
   * act. The SDK (the deployment's `mcp` protocol) is loaded on the first request: its schemas
   * cost a Worker's start that never serves MCP. Without the protocol: 404, saying so.
   */
  async handle(request: Request): Promise<Response> {
    if (!this.#handler) {
      const sdk = this.#ctx.protocols.mcp?.server;
      if (!sdk) return failure(fail("NOT_FOUND", protocolMissing("mcp")));
      const { createMcpHandler, McpServer } = await sdk();
      this.#handler ??= createMcpHandler(
        ({ requestInfo }) => this.#server(new McpServer(SERVER_INFO), callerOf(requestInfo)),
        { legacy: "stateless" },
      );
    }
    return this.#handler.fetch(request);
  }

  async #server(server: McpServer, caller: Caller | null): Promise<McpServer> {
    const tools = await this.#ctx.tools.visible(this.#ctx.header());
    const specs = toolSpecs(tools);
    for (const [i, tool] of tools.entries()) {
      if (CHILD_ONLY.has(tool.name) || tool.name === PENDING_APPROVALS || tool.name === DECIDE_APPROVAL)
        continue;
      const parameters = specs[i]?.parameters ?? { type: "object" };
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: shownAs(parameters, tool) as never },
        (async (args: unknown, extra: McpCallContext) => this.#call(tool, tools, args, extra)) as never,
      );
    }
    // the answers' schemas (the OpenAPI document's) are built with the SDK, on the first request
    this.#approvalTools(server, caller, await import("../../src/contract/responses"));
    return server;
  }

  /** `pending_approvals` and `decide_approval` (README "Approvals"). */
  #approvalTools(
    server: McpServer,
    caller: Caller | null,
    { ApprovalDecided, ApprovalList }: typeof import("../../src/contract/responses"),
  ): void {
    server.registerTool(
      PENDING_APPROVALS,
      {
        description:
          "Lists the tool calls waiting for a person's decision in this session and in every subagent below it, oldest first: " +
          "each with its approvalId, the session that made the call, the tool, its arguments, the call's id and when it was requested (epoch ms). " +
          "A call that waits does not run until it is approved, with decide_approval or by a person elsewhere (HTTP API, dashboard).",
        inputSchema: z.object({}),
        outputSchema: ApprovalList,
      },
      async () => {
        const listed = { approvals: this.#pending().map(pendingApproval) };
        return { content: [{ type: "text", text: JSON.stringify(listed) }], structuredContent: listed };
      },
    );
    server.registerTool(
      DECIDE_APPROVAL,
      {
        description:
          "Decides a pending approval of this session or of a subagent below it (see pending_approvals): " +
          '"approve" lets the held tool call run, exactly once; "deny" answers it with an error result starting "denied", then the reason. ' +
          "Deciding the same way again answers the same; the other decision after one was taken is an error naming ALREADY_DECIDED, " +
          "and an approval that is not in this session's subtree is NOT_FOUND.",
        inputSchema: DecideApprovalArgs,
        outputSchema: ApprovalDecided,
      },
      async ({ approval_id, decision, reason }) => {
        const id = this.#ctx.header()?.id;
        if (!caller || !id) return errorResult("UNAUTHENTICATED: no caller");
        // the HTTP route's own path: the session object authorizes the caller and routes the
        // decision to the session that asked
        const decided = await this.#ctx
          .session(id)
          .decideApproval(caller, approval_id, reason === undefined ? { decision } : { decision, reason });
        if (!decided.ok) return errorResult(`${decided.code}: ${decided.message}`);
        return {
          content: [{ type: "text", text: JSON.stringify(decided.value) }],
          structuredContent: decided.value,
        };
      },
    );
  }

  /** This session's pending approvals and its descendants', oldest first (they travel up to it). */
  #pending(): ApprovalRow[] {
    return this.#ctx.stores.approvals.pending();
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
    // the call joins the client's trace when it sent one (`_meta.traceparent`)
    const client = parseTraceparent(extra.mcpReq._meta?.traceparent);
    stores.transact(() =>
      stores.log.append("mcp/call", {
        callId,
        name: tool.name,
        args: (args ?? {}) as never,
        ...compact({ trace: client }),
      }),
    );
    const sessionId = this.#ctx.header()?.id ?? "";
    const span = mcpCallSpan(sessionId, callId, client);
    const outcome = await executeTool(
      tools,
      tool.name,
      args,
      {
        sessionId,
        callKey,
        toolCallId: callId,
        signal: extra.mcpReq.signal,
        trace: { traceId: span.traceId, parentSpanId: span.spanId },
      },
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
    // the call's span is finished: the drive loop's work (its export, README "Traces") runs now
    this.#ctx.kick();
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
              message: progressMessage(run.childId, this.#waitingBelow(run)),
            },
          })
          .catch(() => {});
    }
    return {
      text: `the subagent ${run.childId} is still running; read it later with task_output or list_agents`,
      isError: false,
    };
  }

  /**
   * The pending approvals a foreground child waits on, from this session's own store (every
   * request travels up to every ancestor): the child's own, those of sessions deeper down, and
   * this session's own that the run holds (a transport's request on the child's behalf, held as
   * `<transport>:<runId>/…`, with no turn). A deeper session's request does not say which child it
   * came through, so one below another child of this session is counted too; this session's other
   * approvals and its other children's are not.
   */
  #waitingBelow(run: { runId: string; childId: string }): PendingApproval[] {
    const { stores } = this.#ctx;
    const self = this.#ctx.header()?.id;
    const otherChild = (id: string) =>
      id !== run.childId && (stores.children.has(id) || stores.runs.byChildId(id) !== undefined);
    const heldByRun = (row: ApprovalRow) =>
      row.turn === undefined && row.callKey?.split("/")[0]?.endsWith(`:${run.runId}`) === true;
    return this.#pending()
      .filter((row) => (row.sessionId === self ? heldByRun(row) : !otherChild(row.sessionId)))
      .map(pendingApproval);
  }
}

/** A foreground call's progress: the child runs, or it waits for a decision on its approvals. */
function progressMessage(childId: string, waiting: readonly PendingApproval[]): string {
  if (waiting.length === 0) return `subagent ${childId} is running`;
  const which = waiting
    .map(
      (a) =>
        `${a.tool} (approval ${a.approvalId}${a.sessionId === childId ? "" : `, session ${a.sessionId}`})`,
    )
    .join(", ");
  return `subagent ${childId} waits for a decision on ${waiting.length === 1 ? "an approval" : `${waiting.length} approvals`}: ${which}; decide it with decide_approval`;
}

/** A tool error result whose text names the failure's code first. */
function errorResult(text: string): { content: { type: "text"; text: string }[]; isError: true } {
  return { content: [{ type: "text", text }], isError: true };
}

/** The caller the session object authorized, from the request the SDK hands the server factory. */
function callerOf(request: Request | undefined): Caller | null {
  return JSON.parse(request?.headers.get(CALLER_HEADER) ?? "null") as Caller | null;
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
    _meta?: { progressToken?: string | number; traceparent?: string };
    notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  };
}
