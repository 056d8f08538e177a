import type { InputRequiredResult } from "@modelcontextprotocol/server";
import type { SessionApprovals } from "../approvals/approvals";

/**
 * What a call of a session tool through the MCP face is made of, shared by the face
 * (mcp-face.ts), its approval gate (face-approval-gate.ts), its elicitation
 * (face-elicitation.ts) and its approval tools (face-approval-tools.ts): the part of the SDK's
 * request context a call uses, the shapes a call answers with, and how long a call waits.
 */

/** How often a waiting call (a foreground run, an approval) reports progress again. */
export const PROGRESS_EVERY_MS = 5_000;
/** A foreground call's longest wait (its child keeps running after; task_output reads it later). */
export const FOREGROUND_LIMIT_MS = 10 * 60_000;

/** The session's approvals, as a face call uses them. */
export type FaceApprovals = Pick<SessionApprovals, "needs" | "ask" | "raise" | "release" | "decide">;

/** A call's text answer, before it is logged as `mcp/result`. */
export type CallAnswer = { text: string; isError: boolean };
/** A call's question to the person at the client: the SDK's `input_required` result. */
export type Question = { question: InputRequiredResult };
/** A tool result as the SDK sends it. */
export type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };

/** The part of the SDK's handler context a tool call uses. */
export interface McpCallContext {
  mcpReq: {
    signal: AbortSignal;
    _meta?: { progressToken?: string | number; traceparent?: string };
    notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
    /** A retried call's answers to the questions its first request asked (revision 2026-07-28). */
    inputResponses?: Record<string, unknown>;
    requestState?: () => unknown;
  };
}

/** A tool error result whose text names the failure's code first. */
export function errorResult(text: string): { content: { type: "text"; text: string }[]; isError: true } {
  return { content: [{ type: "text", text }], isError: true };
}

/** Waits `ms`, or less when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
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
