import { APPROVAL_PATTERN } from "../contract/wire";

/**
 * Which tool calls need a person's yes (README "Approvals"): a session's `requireApproval`
 * patterns, each a tool name or a prefix ending in `*`, with the deployment's REQUIRE_APPROVAL;
 * a child's list is its parent's plus its own, so it can never need fewer approvals. Pure.
 */

/** Pending approvals one session may hold; a call past it gets an error result and nothing waits. */
export const MAX_PENDING_APPROVALS = 32;

/**
 * The call keys of tool calls made through a session's MCP face (`mcp:<callId>`), and of the
 * approvals such a call holds (`mcp:<callId>/<approvalId>`). An MCP client is no person: an approval
 * raised by such a call, or below one (in a child such a call started, at any depth), is never
 * decided by an MCP client's `decide_approval` (README "Approvals").
 */
export const MCP_FACE_CALL_PREFIX = "mcp:";

/** Whether `callKey` is a tool call made through a session's MCP face. */
export function isMcpFaceCall(callKey: string | undefined): boolean {
  return callKey?.startsWith(MCP_FACE_CALL_PREFIX) === true;
}

/** Whether a call of `tool` needs approval under `patterns`. */
export function needsApproval(patterns: readonly string[], tool: string): boolean {
  return patterns.some((p) => (p.endsWith("*") ? tool.startsWith(p.slice(0, -1)) : p === tool));
}

/** A child's requirements: its parent's plus its own, each once, in order; undefined when none. */
export function childRequirements(
  parent: readonly string[] | undefined,
  own: readonly string[] | undefined,
): string[] | undefined {
  const all = [...new Set([...(parent ?? []), ...(own ?? [])])];
  return all.length > 0 ? all : undefined;
}

/**
 * The deployment's REQUIRE_APPROVAL: a JSON list of patterns. A value that is not one fails
 * closed: every call needs approval (an operator's safety rule is never silently dropped).
 */
export function deploymentRequirements(raw: string | undefined): { patterns: string[]; invalid: boolean } {
  if (raw === undefined || raw.trim() === "") return { patterns: [], invalid: false };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (Array.isArray(parsed) && parsed.every((p) => typeof p === "string" && APPROVAL_PATTERN.test(p)))
      return { patterns: parsed as string[], invalid: false };
  } catch {
    // not JSON: fails closed below
  }
  return { patterns: ["*"], invalid: true };
}
