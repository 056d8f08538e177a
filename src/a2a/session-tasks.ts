import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  ListTaskPushNotificationConfigsResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import {
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import type { A2ARequestHandler } from "@a2a-js/sdk/server";
import { MAX_CONTENT_BLOCKS } from "../contract/content";
import { sha256Hex } from "../core/hash";
import { isTerminal, latestQueued, messageDone, needsInput, type TaskFold } from "./task-fold";
import { followTask, readTask, windowFor } from "./task-reads";
import type { TaskSessions } from "./task-sessions";
import { streamTask } from "./task-stream";
import { contentOf, decisionOf, MAX_TASK_BYTES, taskOf } from "./wire";

export type { TaskSessions } from "./task-sessions";

export interface TaskLimits {
  /** How long a blocking `SendMessage` waits for the turn to end before it answers the working task. */
  blockingWaitMs: number;
  /** How long a stream follows a task before it ends (the client subscribes again). */
  streamMs: number;
  /** How long `CancelTask` waits for the interrupted turn to end. */
  cancelWaitMs: number;
}

export const DEFAULT_TASK_LIMITS: TaskLimits = {
  blockingWaitMs: 5 * 60_000,
  streamMs: 15 * 60_000,
  cancelWaitMs: 10_000,
};

/** The most tasks one ListTasks page reads. */
const MAX_LIST_PAGE = 50;
/** The most bytes of tasks one ListTasks answer holds (each task its share of them). */
const MAX_LIST_BYTES = MAX_TASK_BYTES;
/** How many tasks of a ListTasks page are read at once (each read folds a log a page at a time). */
const LIST_READS_AT_ONCE = 4;

/**
 * The A2A face's request handler (the SDK's `A2ARequestHandler`, served by its JSON-RPC
 * transport handlers): a task is a top-level session, read by folding its log (task-fold.ts).
 * Nothing lives in memory between requests, so any Worker instance answers any request and a
 * task outlives every connection. A message without a task id creates the session (keyed by the
 * message id, so a retried send is the same task) and sends the message (same key); with a task
 * or context id it continues that session. Cancel interrupts the turn.
 */
export class SessionTaskHandler implements A2ARequestHandler {
  readonly #card: AgentCard;
  readonly #sessions: TaskSessions;
  readonly #limits: TaskLimits;

  constructor(card: AgentCard, sessions: TaskSessions, limits: TaskLimits = DEFAULT_TASK_LIMITS) {
    this.#card = card;
    this.#sessions = sessions;
    this.#limits = limits;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.#card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError("this agent has no extended card");
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const { id, messageId, fold } = await this.#accept(params);
    if (params.configuration?.returnImmediately) return taskOf(id, fold, params.configuration.historyLength);
    const deadline = Date.now() + this.#limits.blockingWaitMs;
    // a blocking send answers once its message is done, or waits on a person's decision
    const settled = await followTask(
      this.#sessions,
      id,
      fold,
      deadline,
      (f) => messageDone(f, messageId) || needsInput(f, messageId),
    );
    return taskOf(id, settled, params.configuration?.historyLength);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const { id, messageId, fold } = await this.#accept(params);
    yield* streamTask(
      this.#sessions,
      this.#limits.streamMs,
      id,
      fold,
      messageId,
      params.configuration?.historyLength,
    );
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    const window = windowFor(params.historyLength, MAX_TASK_BYTES);
    return taskOf(params.id, await readTask(this.#sessions, params.id, window), params.historyLength);
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const fold = await readTask(this.#sessions, params.id);
    if (isTerminal(fold.phase))
      throw new TaskNotCancelableError(`task ${params.id} is already ${fold.phase}`);
    // an interrupt ends the running turn; a message still in the inbox is not that turn's
    if (latestQueued(fold))
      throw new TaskNotCancelableError(
        `task ${params.id} is queued behind another turn; cancel it once it is working`,
      );
    const interrupted = await this.#sessions.interrupt(params.id);
    if (!interrupted.ok) throw new TaskNotFoundError(`task ${params.id} not found`);
    const deadline = Date.now() + this.#limits.cancelWaitMs;
    return taskOf(
      params.id,
      await followTask(this.#sessions, params.id, fold, deadline, (f) => isTerminal(f.phase)),
    );
  }

  async *resubscribe(params: { id: string }): AsyncGenerator<StreamResponse, void, undefined> {
    const fold = await readTask(this.#sessions, params.id);
    yield* streamTask(
      this.#sessions,
      this.#limits.streamMs,
      params.id,
      fold,
      fold.latest?.messageId,
      undefined,
    );
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    // every task on the page is a fold of its session's log (one object call or more each): a
    // page is kept small so one request stays well inside the platform's subrequest limits
    const pageSize = Math.min(Math.max(params.pageSize ?? 20, 1), MAX_LIST_PAGE);
    const listed = await this.#sessions.list(pageSize, params.pageToken || undefined);
    if (!listed.ok) throw new RequestMalformedError(listed.message);
    const history = params.historyLength ?? 0;
    const artifacts = params.includeArtifacts ?? false;
    // every task gets its share of the answer's bytes, and a fold that keeps no more than that
    const share = Math.floor(MAX_LIST_BYTES / pageSize);
    const window = windowFor(history, share, artifacts);
    const tasks = await inTurns(listed.value.ids, LIST_READS_AT_ONCE, async (id) =>
      taskOf(id, await readTask(this.#sessions, id, window), history, share, { artifacts }),
    );
    const wanted = tasks.filter(
      (t) =>
        (!params.contextId || t.contextId === params.contextId) &&
        (!params.status || t.status?.state === params.status),
    );
    return { tasks: wanted, nextPageToken: listed.value.next ?? "", pageSize, totalSize: wanted.length };
  }

  async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError("push notifications are not supported; stream or poll");
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError("push notifications are not supported; stream or poll");
  }

  async listTaskPushNotificationConfigs(): Promise<ListTaskPushNotificationConfigsResponse> {
    throw new PushNotificationNotSupportedError("push notifications are not supported; stream or poll");
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw new PushNotificationNotSupportedError("push notifications are not supported; stream or poll");
  }

  /**
   * Checks the message, creates or finds its session, sends it; the fold includes the new message.
   * A message to a task whose data part is a decision `{"approvalId", "decision", "reason"?}` decides
   * that approval instead (logged as `approval/decided`, not as a message); it then stands for the
   * task's latest message.
   */
  async #accept(params: SendMessageRequest): Promise<{ id: string; messageId: string; fold: TaskFold }> {
    const message = params.message;
    if (!message?.messageId) throw new RequestMalformedError("message.messageId is required");
    if (params.configuration?.taskPushNotificationConfig)
      throw new PushNotificationNotSupportedError("push notifications are not supported; stream or poll");
    const decision = decisionOf(message.parts);
    const task = message.taskId || message.contextId;
    if (decision && task) return this.#decide(task, decision);
    const content = contentOf(message.parts);
    if ("unsupported" in content)
      throw new ContentTypeNotSupportedError(
        `message parts of kind ${content.unsupported} are not supported`,
      );
    if (content.blocks.length === 0) throw new RequestMalformedError("message.parts is empty");
    if (content.blocks.length > MAX_CONTENT_BLOCKS)
      throw new RequestMalformedError(`message.parts holds more than ${MAX_CONTENT_BLOCKS} parts`);
    const key = `a2a:${await sha256Hex(message.messageId)}`;
    let id = message.taskId || message.contextId;
    if (id) {
      if (message.taskId && message.contextId && message.taskId !== message.contextId)
        throw new RequestMalformedError("taskId and contextId name different tasks");
    } else {
      const created = await this.#sessions.create(key);
      if (!created.ok) throw new UnsupportedOperationError(`could not create a task: ${created.message}`);
      id = created.value.id;
    }
    const sent = await this.#sessions.send(id, content.blocks, key);
    if (!sent.ok) {
      if (sent.code === "NOT_FOUND") throw new TaskNotFoundError(`task ${id} not found`);
      throw new RequestMalformedError(sent.message);
    }
    return { id, messageId: sent.value.messageId, fold: await readTask(this.#sessions, id) };
  }

  async #decide(
    id: string,
    { approvalId, ...decision }: { approvalId: string; decision: "approve" | "deny"; reason?: string },
  ): Promise<{ id: string; messageId: string; fold: TaskFold }> {
    const decided = await this.#sessions.decide(id, approvalId, decision);
    if (!decided.ok) {
      if (decided.code === "NOT_FOUND" && decided.message === "session not found")
        throw new TaskNotFoundError(`task ${id} not found`);
      throw new RequestMalformedError(`${decided.code}: ${decided.message}`);
    }
    const fold = await readTask(this.#sessions, id);
    // a descendant's decision reaches this log through the outbox: it is not pending any more
    delete fold.approvals[approvalId];
    const messageId = fold.latest?.messageId;
    if (messageId === undefined) throw new RequestMalformedError(`task ${id} has no message to continue`);
    return { id, messageId, fold };
  }
}

/** `read` of every item, at most `atOnce` at a time, the answers in the items' order. */
async function inTurns<T, R>(
  items: readonly T[],
  atOnce: number,
  read: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await read(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, worker));
  return out;
}
