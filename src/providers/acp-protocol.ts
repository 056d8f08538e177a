import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import type { ContentBlock } from "../contract/content";
import type { ApprovalDecision, ApprovalScope } from "../contract/events";
import { checkOutboundUrl } from "../contract/outbound-url";
import type { SubagentResult, SubagentStopReason } from "../contract/run";
import { capDiagnostic } from "../core/run-result";
import { scrub } from "./remote-protocol";

/**
 * @module What this runtime asks of an ACP agent (protocol version 1), pure: the params of
 * `initialize`, `session/new`, `session/load` and `session/prompt`, the provider URL's rules, and mapping the
 * prompt's `stopReason` to a run result (semantics.md §12.4), and which of an agent's permission
 * options a person's decision picks (README "Approvals"). The JSON-RPC framing and dispatch
 * are the official ACP SDK's (acp-client.ts). No I/O here.
 */

export const ACP_PROTOCOL_VERSION = 1;

/**
 * Where an ACP agent server listens: the outbound rule (contract/outbound-url.ts) with WebSockets,
 * so wss/https, or ws/http to a loopback host (local development), no user information, no
 * private, shared, link-local, unspecified or metadata host.
 */
/** What an ACP provider's URL may use: wss, or https for the upgrade (plain ws/http to loopback only). */
export const ACP_SCHEMES = ["wss", "https"] as const;

export const AcpUrl = lazySchema(() =>
  z
    .string()
    .max(2048)
    .superRefine((raw, ctx) => {
      const problem = checkOutboundUrl(raw, { schemes: ACP_SCHEMES });
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: raw });
    }),
);

/** The http(s) URL a WebSocket upgrade is fetched from (Workers upgrade over fetch). */
export function upgradeUrl(url: string): string {
  return url.replace(/^ws(s?):/i, "http$1:");
}

export function initializeParams(): unknown {
  return {
    protocolVersion: ACP_PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  };
}

/**
 * The `cwd` this runtime names in `session/new` and `session/load`. ACP requires an absolute path,
 * but a Worker has no directory on the agent's machine to offer, and where an agent with its
 * user's rights works is for whoever runs the agent to decide: `subagents-edge acp-bridge` replaces
 * it with its own (`--cwd`, README, Security and limits: "The ACP bridge"). `/nonexistent` is the path Debian's
 * policy guarantees never to exist, so an agent server that honours a client's cwd instead of
 * pinning its own fails to set up the session rather than working in `/` (what was sent before:
 * the whole filesystem).
 */
export const ACP_SESSION_CWD = "/nonexistent/subagents-edge";

export function newSessionParams(): unknown {
  return { cwd: ACP_SESSION_CWD, mcpServers: [] };
}

/** `session/load` of a session the agent made before (the run's object restarted since). */
export function loadSessionParams(sessionId: string): unknown {
  return { sessionId, cwd: ACP_SESSION_CWD, mcpServers: [] };
}

/** Whether the agent's `initialize` answer offers `session/load` (`agentCapabilities.loadSession`). */
export function offersLoadSession(initialized: unknown): boolean {
  const parsed = z
    .looseObject({ agentCapabilities: z.looseObject({ loadSession: z.boolean().optional() }).optional() })
    .safeParse(initialized);
  return parsed.success && parsed.data.agentCapabilities?.loadSession === true;
}

/** `session/prompt`; `traceparent`: the span that started the run, in `_meta` (the agent's work may join its trace). */
export function promptParams(
  sessionId: string,
  prompt: readonly ContentBlock[],
  traceparent?: string,
): unknown {
  const text = prompt
    .filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  return { sessionId, prompt: [{ type: "text", text }], ...(traceparent ? { _meta: { traceparent } } : {}) };
}

const STOP: Record<string, SubagentStopReason> = {
  end_turn: "completed",
  max_tokens: "max-tokens",
  refusal: "refusal",
  cancelled: "aborted",
};

/** The run's result from the prompt's answer (semantics.md §12.4); anything unknown is `error`. */
export function promptResult(result: unknown, output: string, secrets: readonly string[]): SubagentResult {
  const stop = z.looseObject({ stopReason: z.string() }).safeParse(result);
  const blocks: ContentBlock[] = output.length === 0 ? [] : [{ type: "text", text: output }];
  const reason = stop.success ? STOP[stop.data.stopReason] : undefined;
  if (reason !== undefined) return { output: blocks, stopReason: reason };
  const said = stop.success ? `stop reason ${stop.data.stopReason}` : "an unreadable prompt answer";
  return failedResult(`the ACP agent ended with ${said}`, output, secrets);
}

/** A transport failure, flattened: `error` (or `aborted` after cancellation) with a bounded diagnostic. */
export function failedResult(
  diagnostic: string,
  output: string,
  secrets: readonly string[],
  stopReason: "error" | "aborted" = "error",
): SubagentResult {
  return {
    output: output.length === 0 ? [] : [{ type: "text", text: output }],
    stopReason,
    diagnostic: capDiagnostic(scrub(diagnostic, secrets)),
  };
}

/** An ACP agent's `session/request_permission`, as the runtime reads it. */
export interface PermissionRequest {
  toolCall: { toolCallId?: string; title?: string; kind?: string; rawInput?: unknown } & Record<
    string,
    unknown
  >;
  options: { optionId: string; name?: string; kind?: string }[];
}

/** The request's parts the runtime reads (tolerant: anything else is an empty request). */
export function permissionRequestOf(params: unknown): PermissionRequest {
  const p = (params ?? {}) as { toolCall?: unknown; options?: unknown };
  const toolCall =
    typeof p.toolCall === "object" && p.toolCall !== null
      ? (p.toolCall as PermissionRequest["toolCall"])
      : {};
  const options = Array.isArray(p.options)
    ? (p.options as unknown[]).filter(
        (o): o is PermissionRequest["options"][number] =>
          typeof o === "object" && o !== null && typeof (o as { optionId?: unknown }).optionId === "string",
      )
    : [];
  return { toolCall, options };
}

/** The kinds of option that allow, by the scope of the approve that picks them. */
const ALLOW: Record<ApprovalScope, string> = { once: "allow_once", always: "allow_always" };
const REJECT: Record<ApprovalScope, string> = { once: "reject_once", always: "reject_always" };

/**
 * The scopes an approve of the request can take: `once` where the agent offers an allow-once
 * option, `always` where it offers allow-always (`[]`: it offers no allow option).
 */
export function approvalScopesOf(options: PermissionRequest["options"]): ApprovalScope[] {
  return (["once", "always"] as const).filter((scope) => options.some((o) => o.kind === ALLOW[scope]));
}

/**
 * The agent's own option for a decision. Approve takes the allow option of exactly its scope,
 * never a broader one (a decision asks for `always` to pick allow-always). Deny takes the reject
 * option of its scope, else the other: a denial lets nothing run, however broad. Undefined when
 * the agent offers no such option (the request is then answered `cancelled`).
 */
export function permissionOptionFor(
  options: PermissionRequest["options"],
  decision: ApprovalDecision,
  scope: ApprovalScope,
): string | undefined {
  const kinds =
    decision === "approve" ? [ALLOW[scope]] : [REJECT[scope], REJECT[scope === "once" ? "always" : "once"]];
  for (const kind of kinds) {
    const option = options.find((o) => o.kind === kind);
    if (option) return option.optionId;
  }
  return undefined;
}
