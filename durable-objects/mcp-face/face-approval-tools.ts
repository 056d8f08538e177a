import type { McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";
import { lazySchema } from "../../src/contract/lazy";
import type { Caller } from "../../src/contract/session";
import { DecideApprovalBody } from "../../src/contract/wire";
import type { SessionContext } from "../session/session-context";
import { pendingApproval } from "../session/session-view";
import { errorResult } from "./face-call";

/**
 * The two tools of the MCP face that are the caller's, not the model's (README "Approvals"):
 * `pending_approvals` lists the pending approvals of the session and its descendants, and
 * `decide_approval` decides one through the same path as
 * `POST /v1/sessions/:id/approvals/:approvalId`, with the caller's authority (`by` is the session,
 * or `admin` for an admin caller). Both obey the session's tool filter. An MCP client is a
 * program, not a person: `decide_approval` is offered only where the deployment says a person
 * holds the client (MCP_FACE_DECISIONS=true), and even then never decides an approval marked
 * `mcpFace` (raised by a face call, or below one), which a client could otherwise raise and
 * approve itself. They are logged as what they do (`approval/decided`), not as `mcp/call`.
 */

/** The approval tools' names (fixed); a session tool of the same name is not offered over MCP. */
export const PENDING_APPROVALS = "pending_approvals";
export const DECIDE_APPROVAL = "decide_approval";

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

/**
 * Registers `pending_approvals` and `decide_approval` on `server`, each where `offered` says: the
 * session's tool filter allows it, and for `decide_approval` MCP_FACE_DECISIONS is on.
 * `responses`: the answers' schemas (the OpenAPI document's), built with the SDK.
 */
export function offerApprovalTools(
  server: McpServer,
  ctx: SessionContext,
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
        const listed = { approvals: ctx.stores.approvals.pending().map(pendingApproval) };
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
      const id = ctx.header()?.id;
      if (!caller || !id) return errorResult("UNAUTHENTICATED: no caller");
      // an MCP client never decides what a call through a face raised: it could approve itself
      if (ctx.stores.approvals.get(approval_id)?.mcpFace)
        return errorResult(
          `UNAUTHORIZED: approval ${approval_id} was raised by a call made through an MCP face, or below one (in a subagent such a call started, ` +
            "or in a session that took in a message such a call made); " +
            "no MCP client decides it: a person does, over HTTP (POST /v1/sessions/:id/approvals/:approvalId), in the dashboard, " +
            "or by answering the elicitation of the client that made the call",
        );
      // the HTTP route's own path: the session object authorizes the caller and routes the
      // decision to the session that asked
      const decided = await ctx
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
