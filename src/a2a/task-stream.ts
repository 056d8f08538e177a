import type { StreamResponse } from "@a2a-js/sdk";
import { isTerminal, messageDone, needsInput, type TaskFold } from "./task-fold";
import { followTask } from "./task-reads";
import type { TaskSessions } from "./task-sessions";
import { artifactOf, statusOf, taskOf } from "./wire";

/**
 * A task's stream (SendStreamingMessage, SubscribeToTask) as the A2A face answers it, followed
 * by long polls of its session's log (task-reads.ts): each event is the SDK's `StreamResponse`.
 */

/**
 * The task, then a status update at each change of state, the result as an artifact, and the
 * final status. A stream ends at its first terminal state: a task that is over when its stream
 * starts (a message answered before the stream's first read, or a subscriber to an ended task)
 * is its stream's one event, its result in its artifacts and status message. A message answered
 * already while a later one holds the task gets its artifact and its own final status. A stream
 * also ends after `streamMs` (the client subscribes again).
 */
export async function* streamTask(
  sessions: TaskSessions,
  streamMs: number,
  id: string,
  start: TaskFold,
  messageId: string | undefined,
  historyLength: number | undefined,
): AsyncGenerator<StreamResponse, void, undefined> {
  yield { payload: { $case: "task", value: taskOf(id, start, historyLength) } };
  if (messageId === undefined || isTerminal(start.phase)) return;
  if (messageDone(start, messageId)) {
    yield* updates(id, start, messageId);
    return;
  }
  const deadline = Date.now() + streamMs;
  const phaseOf = (fold: TaskFold) =>
    needsInput(fold, messageId) ? "input-required" : fold.messages[messageId]?.phase;
  let fold = start;
  let announced = phaseOf(start);
  while (!messageDone(fold, messageId) && Date.now() < deadline) {
    fold = await followTask(sessions, id, fold, deadline, (f) => phaseOf(f) !== announced);
    if (phaseOf(fold) === announced) continue;
    announced = phaseOf(fold);
    yield* updates(id, fold, messageId);
  }
}

/** The message's status, after its result as an artifact once the message is done. */
function* updates(id: string, fold: TaskFold, messageId: string): Generator<StreamResponse, void, undefined> {
  const turn = fold.messages[messageId]?.turn;
  const result = turn === undefined ? undefined : fold.results.find((r) => r.turn === turn);
  if (messageDone(fold, messageId) && result !== undefined) {
    yield {
      payload: {
        $case: "artifactUpdate",
        value: {
          taskId: id,
          contextId: id,
          artifact: artifactOf(result.turn, result.content),
          append: false,
          lastChunk: true,
          metadata: undefined,
        },
      },
    };
  }
  yield {
    payload: {
      $case: "statusUpdate",
      value: { taskId: id, contextId: id, status: statusOf(id, fold, messageId), metadata: undefined },
    },
  };
}
