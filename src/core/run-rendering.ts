import { textOf } from "../contract/content";
import type { SubagentResult } from "../contract/run";

/** How run results read to a model: the `subagent` tool's foreground answer and `task_output`. */

export function headline(stopReason: string): string {
  switch (stopReason) {
    case "aborted":
      return "subagent run was cancelled";
    case "error":
      return "subagent run failed";
    case "max-tokens":
      return "subagent hit its token limit before finishing";
    case "refusal":
      return "subagent declined the task";
    default:
      return `subagent ended abnormally (${stopReason})`;
  }
}

export function renderForeground(result: SubagentResult): { text: string; isError: boolean } {
  if (result.stopReason === "completed") {
    const text = result.structured === undefined ? textOf(result.output) : JSON.stringify(result.structured);
    return { text, isError: false };
  }
  const lines = [`Error: ${headline(result.stopReason)}`];
  if (result.diagnostic) lines.push(`Diagnostic: ${result.diagnostic}`);
  const partial = textOf(result.output);
  if (partial) lines.push(`Partial output before the run ended:\n${partial}`);
  return { text: lines.join("\n"), isError: true };
}

export function renderTask(result: SubagentResult | undefined): string {
  if (result === undefined) return "(no new output)\n[status: running]";
  if (result.stopReason === "completed") return `${textOf(result.output)}\n[status: completed]`;
  if (result.stopReason === "aborted") return "(no new output)\n[status: killed]";
  const detail = result.diagnostic
    ? `${result.stopReason}; diagnostic: ${result.diagnostic}`
    : result.stopReason;
  return `[status: failed, ${detail}]`;
}
