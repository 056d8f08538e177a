import type { ContentBlock } from "../contract/content";
import { textOf } from "../contract/content";
import type { TurnEndReason } from "../contract/events";
import type { SubagentStopReason } from "../contract/run";
import { selectOutput } from "./run-result";

/**
 * A continuable child's epoch: its derived residency, its outcome and the settlement notice its
 * parent receives (semantics.md §6.1, §6.6). Pure.
 */

export type Residency = "running" | "waiting" | "settled";

/** running: a turn is open or waking work is accepted (even parked); waiting: owns live children. */
export function residencyOf(facts: {
  openTurn: boolean;
  pendingWaking: boolean;
  ownedChildren: number;
}): Residency {
  if (facts.openTurn || facts.pendingWaking) return "running";
  return facts.ownedChildren > 0 ? "waiting" : "settled";
}

export interface EpochFacts {
  /** Reasons of the turns that ended in this epoch, in order. */
  turnEnds: TurnEndReason[];
  /** Assistant contents of this epoch, in order. */
  assistant: ContentBlock[][];
  /** Whether accepted work was dropped unrun (a drain discarded it). */
  droppedWork: boolean;
}

export function epochOutcome(facts: EpochFacts): { stopReason: SubagentStopReason; output: ContentBlock[] } {
  const last = facts.turnEnds.at(-1);
  let stopReason: SubagentStopReason;
  if (last === undefined || last === "completed") stopReason = facts.droppedWork ? "aborted" : "completed";
  else stopReason = last;
  return { stopReason, output: selectOutput(facts.assistant) };
}

/** `why`: what stopped an aborted epoch, when the notice says it (its deadline). */
export function noticeSummary(childId: string, stopReason: string, why?: string): string {
  const who = `Background subagent ${childId}`;
  switch (stopReason) {
    case "completed":
      return `${who} finished and will do no further work unless you send it more.`;
    case "aborted":
      return why === undefined
        ? `${who} was stopped before it finished.`
        : `${who} was stopped before it finished (${why}).`;
    case "max-tokens":
      return `${who} ran out of room before it finished.`;
    case "refusal":
      return `${who} declined the task.`;
    case "error":
      return `${who} failed before it finished.`;
    default:
      return `${who} ended abnormally (${stopReason}) before it finished.`;
  }
}

export function noticeText(
  childId: string,
  stopReason: string,
  output: readonly ContentBlock[],
  why?: string,
): string {
  const closing = textOf(output);
  const tail = closing.length > 0 ? `Its closing message:\n${closing}` : "It left no closing message.";
  return `${noticeSummary(childId, stopReason, why)}\n${tail}`;
}

export function reportText(childId: string, output: string): string {
  return `Background subagent ${childId} reported:\n${output}`;
}
