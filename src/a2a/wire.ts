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
import { utf8Length } from "../core/quotas";
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
 * The most bytes of JSON one task takes in an answer (`GetTask`, a send's answer, a stream's
 * first event): 4 MiB, less room for the JSON-RPC envelope and the SDK's own fields.
 */
export const MAX_TASK_BYTES = 4 * 1024 * 1024 - 128 * 1024;
/** The most history messages a task holds, whatever `historyLength` asks (A2A lets a server go lower). */
export const MAX_HISTORY_LENGTH = 100;
/** The most artifacts (ended turns' results, the newest) a task holds. */
export const MAX_ARTIFACTS = 100;
/** Where a task says what its answer left out for its size (`{"history": n, "artifacts": n}`). */
export const OMITTED_KEY = "subagents.omitted";

/** The bytes of a value's JSON. */
function bytesOf(value: unknown): number {
  return utf8Length(JSON.stringify(value));
}

/** A text cut to at most `room` bytes of JSON, its end marked with what was cut. */
function cutText(text: string, room: number): string {
  if (bytesOf(text) <= room) return text;
  let keep = Math.max(0, Math.min(text.length, room - 64));
  for (;;) {
    const cut = `${text.slice(0, keep)}…[cut: ${text.length - keep} more characters]`;
    const size = bytesOf(cut);
    if (size <= room || keep === 0) return cut;
    keep = Math.max(0, Math.floor(keep * (room / size) * 0.98) - 64);
  }
}

/** Parts within `room` bytes: those that fit, then the next one's text cut to what is left. */
function cutParts(parts: readonly Part[], room: number): Part[] {
  const out: Part[] = [];
  let left = room;
  for (const part of parts) {
    const size = bytesOf(part);
    if (size <= left) {
      out.push(part);
      left -= size;
      continue;
    }
    if (part.content?.$case === "text" && left > 256)
      out.push({ ...part, content: { $case: "text", value: cutText(part.content.value, left - 128) } });
    break;
  }
  return out;
}

/**
 * The newest of `items` (oldest first) whose JSON fits `room` bytes, oldest first; when not even
 * the newest fits whole, it comes with its parts cut to fit.
 */
function newestWithin<T extends { parts: Part[] }>(items: readonly T[], room: number): T[] {
  const out: T[] = [];
  let left = room;
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    const size = bytesOf(item);
    if (size <= left) {
      out.push(item);
      left -= size;
      continue;
    }
    if (out.length === 0)
      out.push({ ...item, parts: cutParts(item.parts, left - (size - bytesOf(item.parts))) });
    break;
  }
  return out.reverse();
}

/**
 * A folded session as an A2A task: id and context id are the session id; the artifacts are the
 * ended turns' results; `historyLength` keeps the most recent messages (0: none; absent: up to
 * MAX_HISTORY_LENGTH). The task's JSON takes at most `maxBytes`: its status message is cut to a
 * quarter of them, then the newest history messages fill half of what is left and the newest
 * artifacts the rest; a text cut ends in `…[cut: N more characters]`, and the task's
 * `metadata["subagents.omitted"]` counts the messages and artifacts it leaves out.
 */
export function taskOf(
  taskId: string,
  fold: TaskFold,
  historyLength?: number,
  maxBytes = MAX_TASK_BYTES,
  { artifacts: withArtifacts = true }: { artifacts?: boolean } = {},
): Task {
  const full = statusOf(taskId, fold);
  const status: TaskStatus = full.message
    ? { ...full, message: { ...full.message, parts: cutParts(full.message.parts, Math.floor(maxBytes / 4)) } }
    : full;
  let room = maxBytes - bytesOf(status) - 1024;
  const wanted = Math.max(0, Math.min(historyLength ?? MAX_HISTORY_LENGTH, MAX_HISTORY_LENGTH));
  const asked = wanted === 0 ? [] : fold.history.slice(-wanted);
  const history = newestWithin(
    asked.map((m) => historyMessage(taskId, m)),
    Math.floor(room / 2),
  );
  room -= bytesOf(history);
  const results = withArtifacts ? fold.results.slice(-MAX_ARTIFACTS) : [];
  const artifacts = newestWithin(
    results.map((r) => artifactOf(r.turn, r.content)),
    room,
  );
  const omitted = {
    history:
      Math.min(historyLength ?? Number.POSITIVE_INFINITY, fold.history.length + fold.dropped.history) -
      history.length,
    artifacts: withArtifacts ? fold.results.length + fold.dropped.results - artifacts.length : 0,
  };
  return {
    id: taskId,
    contextId: taskId,
    status,
    artifacts,
    history,
    metadata: omitted.history > 0 || omitted.artifacts > 0 ? { [OMITTED_KEY]: omitted } : undefined,
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
