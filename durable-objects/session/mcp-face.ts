import { compact } from "../../src/core/compact";
import type {
  InputRequiredResult,
  McpHttpHandler,
  McpServer,
  StandardSchemaWithJSON,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import type { SessionHost } from "../../src/agent/host";
import { executeTool, filterAllows, type Tool, toolSpecs } from "../../src/agent/tools";
import { textOf } from "../../src/contract/content";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import { MCP_FACE_CALL_PREFIX } from "../../src/core/approvals";
import { lazySchema } from "../../src/contract/lazy";
import { failure } from "../../src/contract/respond";
import { protocolMissing } from "../../src/protocols/protocol";
import { CALLER_HEADER, type Caller } from "../../src/contract/session";
import type { PendingApproval } from "../../src/contract/session-api";
import type { ApprovalDecision } from "../../src/contract/events";
import type { JsonValue } from "../../src/contract/json";
import { DecideApprovalBody } from "../../src/contract/wire";
import { renderForeground } from "../../src/core/run-rendering";
import { logRefusal } from "../../src/core/quotas";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { type ApprovalRow, markBelowMcpFace } from "../store/approvals";
import type { SessionContext } from "./session-context";
import { deniedText, type SessionApprovals } from "./approvals";
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
 * A call through the face is gated like the model's (README "Approvals"): a tool that needs
 * approval (REQUIRE_APPROVAL, the session's `requireApproval`, a tool's `needsApproval`) raises
 * an approval of this session, marked `mcpFace`, listed and decidable over HTTP like any. Where
 * the client declares the elicitation capability on the per-request protocol revision
 * (2026-07-28), the call answers `input_required` with a yes/no form for the person at the client
 * (`elicitation/create`), and the client's retried call carries the answer, which decides the
 * approval (`approval/decided` `by` this session, `via` "mcp-elicitation"); a 2025-era request is
 * served statelessly, so an elicitation it sent could not be answered to this request, and such a
 * call waits instead. A waiting call sends progress notifications (with a progress token) until
 * the approval is decided; it runs once on approve, answers `denied: <reason>` on deny. The
 * approval waits only while the request does: when the request's signal aborts or the wait
 * reaches FOREGROUND_LIMIT_MS (or the object restarts: session/approvals.ts), it is denied saying so, so no approval runs a call nobody awaits (an
 * elicitation's approval likewise expires after FOREGROUND_LIMIT_MS without the retried call).
 *
 * Two more tools are the caller's, not the model's: `pending_approvals` lists the pending
 * approvals of the session and its descendants, and `decide_approval` decides one through the
 * same path as `POST /v1/sessions/:id/approvals/:approvalId`, with the caller's authority (`by` is
 * the session, or `admin` for an admin caller). Both obey the session's tool filter. An MCP client
 * is a program, not a person: `decide_approval` is offered only where the deployment says a
 * person holds the client (MCP_FACE_DECISIONS=true), and even then never decides an approval
 * marked `mcpFace` (raised by a face call, or below one), which a client could otherwise raise
 * and approve itself. They are logged as what they do (`approval/decided`), not as `mcp/call`. A
 * foreground `subagent` call whose child (or a session below it) waits on an approval says so in
 * its progress notifications.
 */

/** Tools a child answers its parent with: not a caller's to use. */
const CHILD_ONLY = new Set(["report", "structured_output"]);
/** Tools whose call puts a message into this session's own inbox, later (its model reads it). */
const MESSAGES_SELF = new Set(["schedule_message"]);

const SERVER_INFO = { name: "subagents-edge session", version: "0.1.0" };
/** How often a foreground call waits for its run before it reports progress again. */
const PROGRESS_EVERY_MS = 5_000;
/** A foreground call's longest wait (its child keeps running after; task_output reads it later). */
const FOREGROUND_LIMIT_MS = 10 * 60_000;
/** The approval tools' names (fixed); a session tool of the same name is not offered over MCP. */
const PENDING_APPROVALS = "pending_approvals";
const DECIDE_APPROVAL = "decide_approval";
/** The holder of a face call's approval that the person at the client is asked about. */
const ELICITATION_HOLDER = "mcp-elicitation:";
/** The elicitation that asks the person at the client about a face call's approval (form mode). */
const ELICITED = "approval";
const APPROVAL_FORM = {
  type: "object",
  properties: {
    approve: {
      type: "boolean",
      title: "Approve",
      description: "Yes runs the call, once; no answers it with an error result starting denied.",
    },
    reason: { type: "string", title: "Reason", description: "Why, in a few words (optional)." },
  },
  required: ["approve"],
} as const;

/** `decide_approval`'s arguments: the HTTP route's body, with the approval's id beside it. */
const DecideApprovalArgs = lazySchema(() =>
  z.object({
    approval_id: z
      .string()
      .min(1)
      .max(128)
      .describe("The approvalId of a pending approval, as pending_approvals lists it."),
    decision: DecideApprovalBody.shape.decision.describe(
      '"approve" runs the held call, once; "deny" answers it with an error result starting "denied".',
    ),
    reason: DecideApprovalBody.shape.reason.describe(
      "Why, in a few words; a denied call's result carries it to the model that made the call.",
    ),
  }),
);

/** The session's approvals, as a face call uses them. */
export type FaceApprovals = Pick<SessionApprovals, "needs" | "ask" | "raise" | "release" | "decide">;

/** MCP_FACE_DECISIONS: "true" says a person holds every client of the face (README "Configuration"). */
export function faceDecisionsOn(raw: string | undefined): boolean {
  return raw?.trim().toLowerCase() === "true";
}

type ServerSdk = typeof import("@modelcontextprotocol/server");
type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };
/** A call's question to the person at the client: the SDK's `input_required` result. */
type Question = { question: InputRequiredResult };

export class McpFace {
  readonly #ctx: SessionContext;
  readonly #host: SessionHost;
  readonly #runs: OneShotRuns;
  readonly #approvals: FaceApprovals;
  readonly #decisions: boolean;
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
    this.#approvalTools(server, caller, await import("../../src/contract/responses"), {
      pending: filterAllows(filter, PENDING_APPROVALS),
      decide: this.#decisions && filterAllows(filter, DECIDE_APPROVAL),
    });
    return server;
  }

  /**
   * `pending_approvals` and `decide_approval` (README "Approvals"), each where `offered` says:
   * the session's tool filter allows it, and for `decide_approval` MCP_FACE_DECISIONS is on.
   */
  #approvalTools(
    server: McpServer,
    caller: Caller | null,
    { ApprovalDecided, ApprovalList }: typeof import("../../src/contract/responses"),
    offered: { pending: boolean; decide: boolean },
  ): void {
    if (offered.pending)
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
    if (!offered.decide) return;
    server.registerTool(
      DECIDE_APPROVAL,
      {
        description:
          "Decides a pending approval of this session or of a subagent below it (see pending_approvals): " +
          '"approve" lets the held tool call run, exactly once; "deny" answers it with an error result starting "denied", then the reason. ' +
          "Deciding the same way again answers the same; the other decision after one was taken is an error naming ALREADY_DECIDED, " +
          "and an approval that is not in this session's subtree is NOT_FOUND. An approval raised by a call made through an MCP face, " +
          "in a subagent such a call started, or in a session that took in a message from such a call, is UNAUTHORIZED here: " +
          "a person decides it (HTTP API, dashboard, the client's elicitation).",
        inputSchema: DecideApprovalArgs,
        outputSchema: ApprovalDecided,
      },
      async ({ approval_id, decision, reason }) => {
        const id = this.#ctx.header()?.id;
        if (!caller || !id) return errorResult("UNAUTHENTICATED: no caller");
        // an MCP client never decides what a call through a face raised: it could approve itself
        if (this.#ctx.stores.approvals.get(approval_id)?.mcpFace)
          return errorResult(
            `UNAUTHORIZED: approval ${approval_id} was raised by a call made through an MCP face, or below one (in a subagent such a call started, ` +
              "or in a session that took in a message such a call made); " +
              "no MCP client decides it: a person does, over HTTP (POST /v1/sessions/:id/approvals/:approvalId), in the dashboard, " +
              "or by answering the elicitation of the client that made the call",
          );
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
    elicits: boolean,
  ): Promise<ToolResult | Record<string, unknown>> {
    const { stores } = this.#ctx;
    // the client's retry of a call this face asked the person about, with the person's answer
    const resumed = this.#resumed(tool, args, extra);
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
      ? this.#answered(resumed.value, extra)
      : this.#approvals.needs({ id: callId, name: tool.name, args }, tool)
        ? elicits
          ? this.#elicit(tool, args, callId)
          : await this.#wait(tool, args, callId, extra)
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
  ): Promise<{ text: string; isError: boolean }> {
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

  /**
   * A gated call whose client cannot be asked: its approval waits while the request does, with
   * progress notifications; "run" once approved, the denial otherwise. The client going away, or
   * the wait reaching FOREGROUND_LIMIT_MS, denies it (nobody would read what it did).
   */
  async #wait(
    tool: Tool<unknown, SessionHost>,
    args: unknown,
    callId: string,
    extra: McpCallContext,
  ): Promise<"run" | { text: string; isError: boolean }> {
    const holder = `${MCP_FACE_CALL_PREFIX}${callId}`;
    let decided: { decision: ApprovalDecision; reason?: string } | undefined;
    const asked = this.#approvals
      .ask(
        holder,
        { toolCallId: callId, tool: tool.name, args: (args ?? {}) as JsonValue },
        { mcpFace: true, waitMs: FOREGROUND_LIMIT_MS },
      )
      .then((answer) => {
        decided = answer;
      });
    const row = this.#held(holder);
    const { signal } = extra.mcpReq;
    const token = extra.mcpReq._meta?.progressToken;
    const deadline = Date.now() + FOREGROUND_LIMIT_MS;
    for (let progress = 1; decided === undefined; progress++) {
      if (signal.aborted || Date.now() >= deadline) {
        this.#approvals.release(
          holder,
          signal.aborted
            ? "the MCP request that made the call ended before a decision"
            : `no decision came within ${FOREGROUND_LIMIT_MS / 60_000} minutes, the longest an MCP call waits`,
        );
        await asked;
        break;
      }
      await Promise.race([asked, pause(PROGRESS_EVERY_MS, signal)]);
      if (decided === undefined && token !== undefined && row)
        await extra.mcpReq
          .notify({
            method: "notifications/progress",
            params: {
              progressToken: token,
              progress,
              message: `the call of ${tool.name} waits for a decision on approval ${row.approvalId}; a person decides it over HTTP or in the dashboard`,
            },
          })
          .catch(() => {});
    }
    if (decided?.decision !== "approve") return { text: deniedText(decided?.reason), isError: true };
    return row ? this.#claim(row.callKey!) : { text: "Error: the call's approval was lost", isError: true };
  }

  /**
   * A gated call whose client can ask its person (elicitation, form mode): the approval is raised
   * and the call answers `input_required` with the question; `requestState` names the approval
   * and a secret only this answer carries, so no other request can answer it.
   */
  #elicit(
    tool: Tool<unknown, SessionHost>,
    args: unknown,
    callId: string,
  ): Question | { text: string; isError: boolean } {
    const secret = crypto.randomUUID().replaceAll("-", "");
    const approvalId = this.#approvals.raise(
      `${ELICITATION_HOLDER}${secret}`,
      { toolCallId: callId, tool: tool.name, args: (args ?? {}) as JsonValue },
      { mcpFace: true, waitMs: FOREGROUND_LIMIT_MS },
    );
    if (approvalId === undefined)
      return {
        text: "Error: the call was not run: this session already waits on the most approvals it may",
        isError: true,
      };
    return this.#question(tool.name, args, `${approvalId}.${secret}`);
  }

  /** The `input_required` answer that asks the person about a call. */
  #question(tool: string, args: unknown, state: string): Question {
    const { inputRequired } = this.#sdk!;
    const shown = JSON.stringify(args ?? {});
    const question = inputRequired({
      inputRequests: {
        [ELICITED]: inputRequired.elicit({
          message: `Allow the call of ${tool} with ${shown.length > 500 ? `${shown.slice(0, 500)}…` : shown}? (approval ${state.split(".")[0]})`,
          requestedSchema: APPROVAL_FORM as never,
        }),
      },
      requestState: state,
    });
    return { question };
  }

  /**
   * The approval a retried call's `requestState` names, if it carries one: it must be this
   * session's, raised by an elicitation of this face with the same secret, for the same tool and
   * arguments (the client retries the call it made); anything else decides nothing.
   */
  #resumed(
    tool: Tool<unknown, SessionHost>,
    args: unknown,
    extra: McpCallContext,
  ): Outcome<ApprovalRow & { state: string }> | undefined {
    const state = extra.mcpReq.requestState?.();
    if (state === undefined) return undefined;
    const [approvalId, secret] = typeof state === "string" ? state.split(".") : [];
    const row = approvalId ? this.#ctx.stores.approvals.get(approvalId) : undefined;
    if (
      !row ||
      secret === undefined ||
      row.sessionId !== this.#ctx.header()?.id ||
      row.callKey !== `${ELICITATION_HOLDER}${secret}/${approvalId}` ||
      row.tool !== tool.name ||
      JSON.stringify(row.args) !== JSON.stringify(args ?? {})
    )
      return fail("INVALID_REQUEST", "requestState names no question this session asked about this call");
    return ok({ ...row, state: state as string });
  }

  /**
   * The person's answer to a call's question decides its approval (unless a decision came
   * first, over HTTP): "run" once approved, the denial otherwise; no answer asks again.
   */
  #answered(
    row: ApprovalRow & { state: string },
    extra: McpCallContext,
  ): "run" | { text: string; isError: boolean } | Question {
    const { inputResponse } = this.#sdk!;
    if (row.decision === undefined) {
      const answer = inputResponse(extra.mcpReq.inputResponses, ELICITED);
      if (answer.kind !== "elicit") return this.#question(row.tool, row.args, row.state);
      const approve = answer.action === "accept" && answer.content?.approve === true;
      const said = answer.content?.reason;
      const reason =
        typeof said === "string" && said.trim() !== ""
          ? said.trim().slice(0, 2000)
          : approve
            ? undefined
            : answer.action === "cancel"
              ? "the person at the MCP client dismissed the question"
              : "the person at the MCP client said no";
      this.#approvals.decide(
        row.approvalId,
        approve ? "approve" : "deny",
        reason,
        this.#ctx.header()?.id ?? "",
        "mcp-elicitation",
      );
    }
    const now = this.#ctx.stores.approvals.get(row.approvalId);
    if (now?.decision !== "approve") return { text: deniedText(now?.reason), isError: true };
    return this.#claim(row.callKey!);
  }

  /** An approved call's one run: "run" the first time, an error for any later request. */
  #claim(approvalKey: string): "run" | { text: string; isError: boolean } {
    const { stores } = this.#ctx;
    const claimed = stores.transact(() => stores.approvals.claimFirstRuns([approvalKey]));
    return claimed.has(approvalKey)
      ? "run"
      : { text: "Error: the call already ran, in an earlier request; it runs once", isError: true };
  }

  /** The approval `holder` holds in this session, pending. */
  #held(holder: string): ApprovalRow | undefined {
    const self = this.#ctx.header()?.id ?? "";
    return this.#ctx.stores.approvals.ownPending(self).find((row) => row.callKey?.startsWith(`${holder}/`));
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
  // the child was started through this face: a person decides its approvals, no MCP client
  return `subagent ${childId} waits for a decision on ${waiting.length === 1 ? "an approval" : `${waiting.length} approvals`}: ${which}; a person decides it over HTTP or in the dashboard`;
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

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The part of the SDK's handler context a tool call uses. */
interface McpCallContext {
  mcpReq: {
    signal: AbortSignal;
    _meta?: { progressToken?: string | number; traceparent?: string };
    notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
    /** A retried call's answers to the questions its first request asked (revision 2026-07-28). */
    inputResponses?: Record<string, unknown>;
    requestState?: () => unknown;
  };
}
