import type { ContentBlock } from "../contract/content";
import type { SessionEvent } from "../contract/events";
import { type EventPage, MAX_TEXT_READ_SEQS } from "../contract/session-api";
import { TaskNotFoundError } from "@a2a-js/sdk/errors";
import {
  emptyFold,
  type FoldWindow,
  fillText,
  foldTask,
  type TaskFold,
  textLeftOut,
  textsLeftOut,
} from "./task-fold";
import type { TaskSessions } from "./task-sessions";
import { MAX_ARTIFACTS, MAX_HISTORY_LENGTH, MAX_TASK_BYTES } from "./wire";

/**
 * How the A2A face reads a task (task-fold.ts): its session's whole log folded, a page at a time,
 * with the messages' text left where it is but for what the fold keeps; and a task followed as
 * it changes, by long polls of its log. A task the runtime does not find is `TaskNotFoundError`.
 */

/** One long-poll read waits at most this long (the object's own cap is 60 s). */
const POLL_MS = 25_000;

export /** What a fold keeps for an answer showing `historyLength` messages within `maxBytes`. */
function windowFor(historyLength: number | undefined, maxBytes: number, artifacts = true): FoldWindow {
  return {
    messages: Math.max(0, Math.min(historyLength ?? MAX_HISTORY_LENGTH, MAX_HISTORY_LENGTH)),
    results: artifacts ? MAX_ARTIFACTS : 1,
    chars: maxBytes,
  };
}

/** The page's events, each whose text was left out holding `textLeftOut` in its place. */
function withTextLeftOut(page: EventPage): SessionEvent[] {
  const chars = page.textChars ?? {};
  return page.events.map((event) => {
    const left = chars[event.seq];
    return left === undefined
      ? event
      : ({ ...event, data: { ...event.data, content: textLeftOut(event.seq, left) } } as SessionEvent);
  });
}

/**
 * The task as it is now: the whole log folded (a page at a time, no waiting), keeping what
 * `window` says (by default what a task's answer can show). The log's text stays where it is
 * but for what the fold keeps: the first read leaves every message's text out (the fold keeps
 * at least what it would keep of the texts), the second reads the kept ones, every one of them
 * at or before where the first read ended (the log only grows), and the fold takes them in.
 */
export async function readTask(
  sessions: TaskSessions,
  id: string,
  window = windowFor(undefined, MAX_TASK_BYTES),
): Promise<TaskFold> {
  let fold = emptyFold(window);
  for (;;) {
    const page = await sessions.events(id, fold.cursor, 0, { leave: true });
    if (!page.ok) throw new TaskNotFoundError(`task ${id} not found`);
    fold = foldTask(fold, withTextLeftOut(page.value));
    if (page.value.next === null) break;
  }
  const wanted = textsLeftOut(fold);
  const texts = new Map<number, ContentBlock[]>();
  for (let at = 0; at < wanted.length; at += MAX_TEXT_READ_SEQS) {
    const only = wanted.slice(at, at + MAX_TEXT_READ_SEQS);
    for (let after: number | null = -1; after !== null; ) {
      const page = await sessions.events(id, after, 0, { only });
      if (!page.ok) throw new TaskNotFoundError(`task ${id} not found`);
      for (const event of page.value.events)
        texts.set(event.seq, (event.data as { content: ContentBlock[] }).content);
      after = page.value.next;
    }
  }
  return wanted.length === 0 ? fold : fillText(fold, texts);
}

/** Folds new events as they come (long polls) until `until` holds or the deadline passes. */
export async function followTask(
  sessions: TaskSessions,
  id: string,
  start: TaskFold,
  deadline: number,
  until: (fold: TaskFold) => boolean,
): Promise<TaskFold> {
  let fold = start;
  while (!until(fold)) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const page = await sessions.events(id, fold.cursor, Math.min(left, POLL_MS));
    if (!page.ok) throw new TaskNotFoundError(`task ${id} not found`);
    if (page.value.events.length === 0) continue;
    fold = foldTask(fold, page.value.events);
  }
  return fold;
}
