import type { SessionHost } from "../../src/agent/host";
import type { Tool } from "../../src/agent/tools";
import type { ApprovalDecision } from "../../src/contract/events";
import type { JsonValue } from "../../src/contract/json";
import { MCP_FACE_CALL_PREFIX } from "../../src/core/approvals";
import { deniedText } from "../approvals/approvals";
import type { SessionContext } from "../session/session-context";
import type { ApprovalRow } from "../store/approvals";
import {
  type CallAnswer,
  FOREGROUND_LIMIT_MS,
  type FaceApprovals,
  type McpCallContext,
  PROGRESS_EVERY_MS,
  pause,
} from "./face-call";

/**
 * The approval gate of a call through the MCP face whose client cannot be asked (README
 * "Approvals"): a tool that needs approval (REQUIRE_APPROVAL, the session's `requireApproval`, a
 * tool's `needsApproval`) raises an approval of this session, marked `mcpFace`, listed and
 * decidable over HTTP like any. The call waits, with progress notifications (when the client sent
 * a progress token), until the approval is decided: it runs once on approve, answers
 * `denied: <reason>` on deny. The approval waits only while the request does: when the request's
 * signal aborts or the wait reaches FOREGROUND_LIMIT_MS (or the object restarts:
 * approvals/approvals.ts), it is denied saying so, so no approval runs a call nobody awaits.
 *
 * An approved call runs once: `claim` takes its one run, for whichever request comes first (the
 * waiting request here, or an elicitation's retried call: face-elicitation.ts).
 */
export class FaceApprovalGate {
  readonly #ctx: SessionContext;
  readonly #approvals: FaceApprovals;

  constructor(ctx: SessionContext, approvals: FaceApprovals) {
    this.#ctx = ctx;
    this.#approvals = approvals;
  }

  /**
   * A gated call whose client cannot be asked: its approval waits while the request does, with
   * progress notifications; "run" once approved, the denial otherwise. The client going away, or
   * the wait reaching FOREGROUND_LIMIT_MS, denies it (nobody would read what it did).
   */
  async wait(
    tool: Tool<unknown, SessionHost>,
    args: unknown,
    callId: string,
    extra: McpCallContext,
  ): Promise<"run" | CallAnswer> {
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
    return row ? this.claim(row.callKey!) : { text: "Error: the call's approval was lost", isError: true };
  }

  /** An approved call's one run: "run" the first time, an error for any later request. */
  claim(approvalKey: string): "run" | CallAnswer {
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
}
