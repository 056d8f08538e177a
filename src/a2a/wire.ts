import {
  type Artifact,
  type Message,
  type Part,
  Role,
  type Task,
  TaskState,
  type TaskStatus,
} from "@a2a-js/sdk";
import type { ContentBlock } from "../contract/content";
import {
  type FoldedMessage,
  isTerminal,
  needsInput,
  pendingApprovals,
  type TaskFold,
  type TaskPhase,
} from "./task-fold";

/**
 * Between the runtime's records and the A2A SDK's types (A2A 1.0, as `@a2a-js/sdk` models it):
 * a folded session as a `Task`, an A2A message's parts as content blocks.
 */

const STATE: Record<TaskPhase, TaskState> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

export function taskStateOf(phase: TaskPhase): TaskState {
  return STATE[phase];
}

export function textPart(text: string): Part {
  return {
    content: { $case: "text", value: text },
    metadata: undefined,
    filename: "",
    mediaType: "text/plain",
  };
}

function message(taskId: string, id: string, role: Role, content: readonly ContentBlock[]): Message {
  return {
    messageId: `${taskId}:${id}`,
    contextId: taskId,
    taskId,
    role,
    parts: content.map((block) => textPart(block.text)),
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function historyMessage(taskId: string, m: FoldedMessage): Message {
  return message(taskId, m.id, m.role === "user" ? Role.ROLE_USER : Role.ROLE_AGENT, m.content);
}

/**
 * The status of the task as its latest message stands (or as `messageId` stands, for the caller
 * that sent it): its state, and as its message the turn's result (or why it failed).
 */
export function statusOf(taskId: string, fold: TaskFold, messageId = fold.latest?.messageId): TaskStatus {
  const state = messageId === undefined ? undefined : fold.messages[messageId];
  const phase = state?.phase ?? fold.phase;
  const turn = state?.turn;
  const result =
    turn !== undefined && isTerminal(phase) ? fold.results.find((r) => r.turn === turn)?.content : undefined;
  let statusMessage: Message | undefined;
  // a working task whose turn (or a child's) waits on an approval asks for the user's decision
  if (needsInput(fold, messageId))
    return {
      state: TaskState.TASK_STATE_INPUT_REQUIRED,
      message: approvalsMessage(taskId, fold),
      timestamp: new Date(fold.changedAt || Date.now()).toISOString(),
    };
  if (result !== undefined) statusMessage = message(taskId, `turn-${turn}`, Role.ROLE_AGENT, result);
  else if (phase === "failed" && state?.reason !== undefined)
    statusMessage = message(taskId, `failure-${messageId}`, Role.ROLE_AGENT, [
      { type: "text", text: state.reason },
    ]);
  return {
    state: taskStateOf(phase),
    message: statusMessage,
    timestamp: new Date(fold.changedAt || Date.now()).toISOString(),
  };
}

/**
 * The pending approvals as an agent message: a text naming them and a data part
 * `{"approvals": [...]}`; a reply whose data part is `{"approvalId", "decision", "reason"?}` decides one.
 */
function approvalsMessage(taskId: string, fold: TaskFold): Message {
  const approvals = pendingApprovals(fold);
  const names = approvals.map((a) => `${a.tool} (${a.approvalId})`).join(", ");
  return {
    messageId: `${taskId}:approvals-${approvals
      .map((a) => a.approvalId)
      .join(",")
      .slice(0, 200)}`,
    contextId: taskId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [
      textPart(
        `Waiting for a decision on ${approvals.length === 1 ? "a call" : `${approvals.length} calls`}: ${names}. ` +
          'Reply with a data part {"approvalId", "decision": "approve" | "deny", "reason"?}.',
      ),
      {
        content: { $case: "data", value: { approvals } },
        metadata: undefined,
        filename: "",
        mediaType: "application/json",
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A decision carried by a message's data part: `{"approvalId", "decision", "reason"?}`. */
export function decisionOf(
  parts: readonly Part[],
): { approvalId: string; decision: "approve" | "deny"; reason?: string } | undefined {
  for (const part of parts) {
    if (part.content?.$case !== "data") continue;
    const value = part.content.value as Record<string, unknown> | undefined;
    const { approvalId, decision, reason } = value ?? {};
    if (typeof approvalId !== "string" || (decision !== "approve" && decision !== "deny")) continue;
    return { approvalId, decision, ...(typeof reason === "string" ? { reason } : {}) };
  }
  return undefined;
}

export function artifactOf(turn: number, content: readonly ContentBlock[]): Artifact {
  return {
    artifactId: `turn-${turn}`,
    name: "result",
    description: "",
    parts: content.map((block) => textPart(block.text)),
    metadata: undefined,
    extensions: [],
  };
}

/**
 * A folded session as an A2A task: id and context id are the session id; the artifacts are the
 * ended turns' results; `historyLength` keeps the most recent messages (0: none; absent: all).
 */
export function taskOf(taskId: string, fold: TaskFold, historyLength?: number): Task {
  const history = fold.history.map((m) => historyMessage(taskId, m));
  return {
    id: taskId,
    contextId: taskId,
    status: statusOf(taskId, fold),
    artifacts: fold.results.map((r) => artifactOf(r.turn, r.content)),
    history:
      historyLength === undefined ? history : history.slice(Math.max(0, history.length - historyLength)),
    metadata: undefined,
  };
}

/**
 * An A2A message's parts as content: text as text, structured data as its JSON. Files (bytes or
 * URLs) are not something a session's model can read here: `undefined` names the first such part.
 */
export function contentOf(parts: readonly Part[]): { blocks: ContentBlock[] } | { unsupported: string } {
  const blocks: ContentBlock[] = [];
  for (const part of parts) {
    const content = part.content;
    if (content?.$case === "text") blocks.push({ type: "text", text: content.value });
    else if (content?.$case === "data") blocks.push({ type: "text", text: JSON.stringify(content.value) });
    else return { unsupported: content?.$case ?? "empty" };
  }
  return { blocks };
}

/** The text of a task's result: its status message's text, else its artifacts' text. */
export function resultTextOf(task: Task): string {
  const texts = (parts: readonly Part[]) =>
    parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : []));
  const fromStatus = texts(task.status?.message?.parts ?? []);
  if (fromStatus.length > 0) return fromStatus.join("\n");
  return task.artifacts.flatMap((a) => texts(a.parts)).join("\n");
}
