import type { McpHttpHandler, McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import type { SessionHost } from "../../src/agent/host";
import { executeTool, filterAllows, type Tool, toolSpecs } from "../../src/agent/tools";
import { textOf } from "../../src/contract/content";
import { fail } from "../../src/contract/errors";
import type { PendingApproval } from "../../src/contract/session-api";
import { CALLER_HEADER, type Caller } from "../../src/contract/session";
import { failure } from "../../src/contract/respond";
import { compact } from "../../src/core/compact";
import { MCP_FACE_CALL_PREFIX } from "../../src/core/approvals";
import { logRefusal } from "../../src/core/quotas";
import { renderForeground } from "../../src/core/run-rendering";
import { protocolMissing } from "../../src/protocols/protocol";
import { mcpCallSpan } from "../../src/trace/span-ids";
import { parseTraceparent } from "../../src/trace/traceparent";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { type ApprovalRow, markBelowMcpFace } from "../store/approvals";
import type { SessionContext } from "../session/session-context";
import { pendingApproval } from "../session/session-view";
import { FaceApprovalGate } from "./face-approval-gate";
import { DECIDE_APPROVAL, offerApprovalTools, PENDING_APPROVALS } from "./face-approval-tools";
import {
  type CallAnswer,
  errorResult,
  FOREGROUND_LIMIT_MS,
  type FaceApprovals,
  type McpCallContext,
  PROGRESS_EVERY_MS,
  type ToolResult,
} from "./face-call";
import { FaceElicitation } from "./face-elicitation";

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
 * as `mcp/call` and `mcp/result`, so a transcript tells them apart from the model's own calls. A
 * foreground `subagent` call whose child (or a session below it) waits on an approval says so in
 * its progress notifications.
 *
 * A call through the face is gated like the model's (README "Approvals"): where the client can
 * ask its person (elicitation on revision 2026-07-28) the call asks (face-elicitation.ts);
 * elsewhere it waits for a decision while the request does (face-approval-gate.ts). The caller's
 * own tools, `pending_approvals` and `decide_approval`, are face-approval-tools.ts.
 */

/** Tools a child answers its parent with: not a caller's to use. */
const CHILD_ONLY = new Set(["report", "structured_output"]);
/** Tools whose call puts a message into this session's own inbox, later (its model reads it). */
const MESSAGES_SELF = new Set(["schedule_message"]);

const SERVER_INFO = { name: "subagents-edge session", version: "0.1.0" };

/** MCP_FACE_DECISIONS: "true" says a person holds every client of the face (README "Configuration"). */
export function faceDecisionsOn(raw: string | undefined): boolean {
  return raw?.trim().toLowerCase() === "true";
}

type ServerSdk = typeof import("@modelcontextprotocol/server");

export class McpFace {
  readonly #ctx: SessionContext;
  readonly #host: SessionHost;
  readonly #runs: OneShotRuns;
  readonly #approvals: FaceApprovals;
  readonly #decisions: boolean;
  readonly #gate: FaceApprovalGate;
  readonly #elicitation: FaceElicitation;
  #handler: McpHttpHandler | undefined;
  #sdk: ServerSdk | undefined;

  /** `decisions`: MCP_FACE_DECISIONS is on (`decide_approval` is offered). */
  constructor(
    ctx: SessionContext,
    host: SessionHost,
    runs: OneShotRuns,
    approvals: FaceApprovals,
    decisions: boolean,
  ) {
    this.#ctx = ctx;
    this.#host = host;
    this.#runs = runs;
    this.#approvals = approvals;
    this.#decisions = decisions;
    this.#gate = new FaceApprovalGate(ctx, approvals);
    this.#elicitation = new FaceElicitation(ctx, approvals, this.#gate, () => this.#sdk!);
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
      const loaded = await sdk();
      this.#sdk ??= loaded;
      const { createMcpHandler, McpServer } = loaded;
      this.#handler ??= createMcpHandler(
        ({ requestInfo, era }) =>
          this.#server(new McpServer(SERVER_INFO), callerOf(requestInfo), era === "modern"),
        { legacy: "stateless" },
      );
    }
    return this.#handler.fetch(request);
  }

  /** `modern`: the request is of the per-request revision (2026-07-28), where elicitation works. */
  async #server(server: McpServer, caller: Caller | null, modern: boolean): Promise<McpServer> {
    const header = this.#ctx.header();
    const tools = await this.#ctx.tools.visible(header);
    const specs = toolSpecs(tools);
    // a person answers the face's questions where the client says it can show a form
    const elicits = () => modern && server.server.getClientCapabilities()?.elicitation !== undefined;
    for (const [i, tool] of tools.entries()) {
      if (CHILD_ONLY.has(tool.name) || tool.name === PENDING_APPROVALS || tool.name === DECIDE_APPROVAL)
        continue;
      const parameters = specs[i]?.parameters ?? { type: "object" };
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: shownAs(parameters, tool) as never },
        (async (args: unknown, extra: McpCallContext) =>
          this.#call(tool, tools, args, extra, elicits())) as never,
      );
    }
    // the answers' schemas (the OpenAPI document's) are built with the SDK, on the first request
    const filter = header?.options.toolFilter;
    offerApprovalTools(server, this.#ctx, caller, await import("../../src/contract/responses"), {
      pending: filterAllows(filter, PENDING_APPROVALS),
      decide: this.#decisions && filterAllows(filter, DECIDE_APPROVAL),
    });
    return server;
  }

  /** This session's pending approvals and its descendants', oldest first (they travel up to it). */
  #pending(): ApprovalRow[] {
    return this.#ctx.stores.approvals.pending();
  }

  /**
   * One call of a session tool through the face: logged as `mcp/call` (or resumed from the
   * question it asked), gated, run once it may, and its answer logged as `mcp/result`.
   */
  async #call(
    tool: Tool<unknown, SessionHost>,
    tools: readonly Tool<unknown, SessionHost>[],
    args: unknown,
    extra: McpCallContext,
    elicits: boolean,
  ): Promise<ToolResult | Record<string, unknown>> {
    const { stores } = this.#ctx;
    // the client's retry of a call this face asked the person about, with the person's answer
    const resumed = this.#elicitation.resumed(tool, args, extra);
    if (resumed && !resumed.ok) return errorResult(`${resumed.code}: ${resumed.message}`);
    let callId: string;
    if (resumed) callId = resumed.value.toolCallId;
    else {
      // a log at its quota takes no new work, and a refused call writes nothing (MAX_LOG_BYTES)
      const full = logRefusal(stores.log.bytes(), this.#ctx.limits.logCap);
      if (full) return errorResult(`${full.code}: ${full.message}`);
      callId = `mcp_${crypto.randomUUID().replaceAll("-", "")}`;
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
    }
    const gate = resumed
      ? this.#elicitation.answered(resumed.value, extra)
      : this.#approvals.needs({ id: callId, name: tool.name, args }, tool)
        ? elicits
          ? this.#elicitation.ask(tool, args, callId)
          : await this.#gate.wait(tool, args, callId, extra)
        : "run";
    // the person is being asked: the call goes on in the client's retried request
    if (gate !== "run" && "question" in gate) return gate.question;
    const { text, isError } = gate === "run" ? await this.#run(tool, tools, args, callId, extra) : gate;
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

  /** Runs a call (once it may): its tool, then, for a foreground `subagent`, the child's run. */
  async #run(
    tool: Tool<unknown, SessionHost>,
    tools: readonly Tool<unknown, SessionHost>[],
    args: unknown,
    callId: string,
    extra: McpCallContext,
  ): Promise<CallAnswer> {
    const callKey = `${MCP_FACE_CALL_PREFIX}${callId}`;
    const sessionId = this.#ctx.header()?.id ?? "";
    const { stores } = this.#ctx;
    // the message it schedules is the client's: this session is below the face from now on (a
    // send_message's child is marked as it takes the message in: session-host.ts)
    if (MESSAGES_SELF.has(tool.name)) stores.transact(() => markBelowMcpFace(stores.header));
    const span = mcpCallSpan(sessionId, callId, parseTraceparent(extra.mcpReq._meta?.traceparent));
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
    if ("deferred" in outcome) return this.#foreground(callKey, extra);
    return { text: textOf(outcome.content), isError: outcome.isError === true };
  }

  /** Waits for the run a foreground `subagent` call started, with progress while it runs. */
  async #foreground(callKey: string, extra: McpCallContext): Promise<CallAnswer> {
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
  // the child was started through this face: a person decides its approvals, no MCP client
  return `subagent ${childId} waits for a decision on ${waiting.length === 1 ? "an approval" : `${waiting.length} approvals`}: ${which}; a person decides it over HTTP or in the dashboard`;
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
