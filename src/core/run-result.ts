import type { ContentBlock } from "../contract/content";
import { isEmptyContent } from "../contract/content";
import type { TurnEndReason, Usage } from "../contract/events";
import type { JsonValue } from "../contract/json";
import type { SubagentResult, SubagentStopReason } from "../contract/run";

/** How a one-shot child's own log becomes its result (semantics.md §3.2, §5.6). Pure. */

export const DIAGNOSTIC_LIMIT_BYTES = 4096;
const TRUNCATED = " …[diagnostic truncated]";

export function stopReasonOf(reason: TurnEndReason | undefined): SubagentStopReason {
  switch (reason) {
    case "completed":
    case "aborted":
    case "max-tokens":
    case "refusal":
      return reason;
    default:
      return "error";
  }
}

/** The last non-empty assistant content; `[]` when there is none (selection ignores the stop reason). */
export function selectOutput(assistantContents: readonly ContentBlock[][]): ContentBlock[] {
  for (let i = assistantContents.length - 1; i >= 0; i--) {
    const content = assistantContents[i]!;
    if (content.length > 0 && !isEmptyContent(content)) return content;
  }
  return [];
}

/** Caps a diagnostic at 4096 UTF-8 bytes, keeping whole code points and a visible marker. */
export function capDiagnostic(text: string): string {
  const encoder = new TextEncoder();
  if (encoder.encode(text).byteLength <= DIAGNOSTIC_LIMIT_BYTES) return text;
  const budget = DIAGNOSTIC_LIMIT_BYTES - encoder.encode(TRUNCATED).byteLength;
  let used = 0;
  let out = "";
  for (const ch of text) {
    const size = encoder.encode(ch).byteLength;
    if (used + size > budget) break;
    used += size;
    out += ch;
  }
  return out + TRUNCATED;
}

export interface OneShotFacts {
  /** Assistant message contents of the child's own suffix, in order. */
  assistant: ContentBlock[][];
  /** The child's last consumed turn end, if any. */
  turnEnd?: { reason: TurnEndReason; error?: string };
  /** Whether an output schema was requested, and the committed capture if one was made. */
  schemaRequested: boolean;
  capture?: { value: JsonValue };
  /** The child's model usage over those messages, summed. */
  usage?: Usage;
}

export function oneShotResult(facts: OneShotFacts): SubagentResult {
  let stopReason = stopReasonOf(facts.turnEnd?.reason);
  let diagnostic: string | undefined;
  if (facts.turnEnd === undefined) diagnostic = "the child ended without finishing a turn";
  else if (facts.turnEnd.reason === "error")
    diagnostic = facts.turnEnd.error ?? "the child's model call failed";
  if (stopReason === "completed" && facts.schemaRequested && facts.capture === undefined) {
    stopReason = "error";
    diagnostic = "the child completed without calling structured_output";
  }
  const result: SubagentResult = { output: selectOutput(facts.assistant), stopReason };
  if (stopReason === "completed" && facts.capture !== undefined) result.structured = facts.capture.value;
  if (diagnostic !== undefined && stopReason !== "completed") result.diagnostic = capDiagnostic(diagnostic);
  if (facts.usage) result.usage = facts.usage;
  return result;
}

export function abortedBeforeStart(): SubagentResult {
  return {
    output: [],
    stopReason: "aborted",
    diagnostic: "the run was cancelled before the child's turn started",
  };
}
