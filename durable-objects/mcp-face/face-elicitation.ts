import type { SessionHost } from "../../src/agent/host";
import type { Tool } from "../../src/agent/tools";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { JsonValue } from "../../src/contract/json";
import { deniedText } from "../approvals/approvals";
import type { SessionContext } from "../session/session-context";
import type { ApprovalRow } from "../store/approvals";
import type { FaceApprovalGate } from "./face-approval-gate";
import {
  type CallAnswer,
  FOREGROUND_LIMIT_MS,
  type FaceApprovals,
  type McpCallContext,
  type Question,
} from "./face-call";

/**
 * The elicitation of a gated call through the MCP face (README "Approvals"), on the per-request
 * protocol revision (2026-07-28) where the client declares the elicitation capability: the call's
 * approval is raised (marked `mcpFace`) and the call answers `input_required` with a yes/no form
 * for the person at the client (`elicitation/create`); the client's retried call carries the
 * answer, which decides the approval (`approval/decided` `by` this session, `via`
 * "mcp-elicitation"), and then runs the call once (FaceApprovalGate.claim). The retried call's
 * `requestState` names the approval and a secret only the question carried, so no other request
 * answers it. An elicitation's approval expires after FOREGROUND_LIMIT_MS without the retried
 * call. A 2025-era request is served statelessly, so an elicitation it sent could not be answered
 * to this request: such a call waits instead (face-approval-gate.ts).
 */

type ServerSdk = typeof import("@modelcontextprotocol/server");

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

export class FaceElicitation {
  readonly #ctx: SessionContext;
  readonly #approvals: FaceApprovals;
  readonly #gate: FaceApprovalGate;
  /** The SDK, loaded by the face before its first request is served. */
  readonly #sdk: () => ServerSdk;

  constructor(ctx: SessionContext, approvals: FaceApprovals, gate: FaceApprovalGate, sdk: () => ServerSdk) {
    this.#ctx = ctx;
    this.#approvals = approvals;
    this.#gate = gate;
    this.#sdk = sdk;
  }

  /**
   * A gated call whose client can ask its person (elicitation, form mode): the approval is raised
   * and the call answers `input_required` with the question; `requestState` names the approval
   * and a secret only this answer carries, so no other request can answer it.
   */
  ask(tool: Tool<unknown, SessionHost>, args: unknown, callId: string): Question | CallAnswer {
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

  /**
   * The approval a retried call's `requestState` names, if it carries one: it must be this
   * session's, raised by an elicitation of this face with the same secret, for the same tool and
   * arguments (the client retries the call it made); anything else decides nothing.
   */
  resumed(
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
  answered(row: ApprovalRow & { state: string }, extra: McpCallContext): "run" | CallAnswer | Question {
    const { inputResponse } = this.#sdk();
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
    return this.#gate.claim(row.callKey!);
  }

  /** The `input_required` answer that asks the person about a call. */
  #question(tool: string, args: unknown, state: string): Question {
    const { inputRequired } = this.#sdk();
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
}
