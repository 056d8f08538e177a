import type { ContentBlock } from "../contract/content";
import type { Outcome } from "../contract/errors";
import type { EventPage, EventTextRead } from "../contract/session-api";

/**
 * What the A2A face needs of the runtime, for one authenticated caller (an admin of one tenant):
 * sessions it may see, created and driven exactly as the HTTP API does.
 */
export interface TaskSessions {
  /** A new top-level session with the default model; the same `key` again is the same session. */
  create(key: string): Promise<Outcome<{ id: string }>>;
  /** Sends a user message; the same `key` again is the same message (never a second one). */
  send(id: string, content: ContentBlock[], key: string): Promise<Outcome<{ messageId: string }>>;
  /**
   * A page of the session's log after `after`; an empty page waits up to `waitMs` for an event.
   * `text`: what of the messages' text the page carries (absent: all of it).
   */
  events(id: string, after: number, waitMs: number, text?: EventTextRead): Promise<Outcome<EventPage>>;
  interrupt(id: string): Promise<Outcome<unknown>>;
  /** Decides an approval of the session's tree (README "Approvals"). */
  decide(
    id: string,
    approvalId: string,
    decision: { decision: "approve" | "deny"; reason?: string },
  ): Promise<Outcome<unknown>>;
  /** The caller's top-level sessions, newest first, a page at a time. */
  list(limit: number, cursor: string | undefined): Promise<Outcome<{ ids: string[]; next: string | null }>>;
}
