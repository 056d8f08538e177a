import type { CreateSession, EventTextRead, SendInput } from "../../src/contract/session-api";
import { ok } from "../../src/contract/errors";
import { callerMethod, notFound, peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

/** The conversation's methods: the session's creation, its view, messages, the log, interrupt and compaction. */
export const conversationMethods = {
  /** The registry Worker creates the session (idempotent by its key): the object's storage opens for it. */
  create: peerMethod({
    opens: () => true,
    absent: notFound("no such session"),
    run: (parts: Parts, input: CreateSession) => parts.conversation.create(input),
  }),
  describe: callerMethod({
    need: "read",
    run: (parts: Parts, { header }) => ok(parts.conversation.view(header)),
  }),
  /** The providers this session may use (its tenant, its `providers` option), for its token's listings. */
  providerScope: callerMethod({
    need: "read",
    run: (parts: Parts, { header }) => ok(parts.conversation.providerScope(header)),
  }),
  send: callerMethod({
    need: "act",
    run: (parts: Parts, _call, input: SendInput) => parts.conversation.send(input),
  }),
  events: callerMethod({
    need: "read",
    run: (
      parts: Parts,
      _call,
      query: { after: number; limit: number; maxBytes?: number; text?: EventTextRead },
      waitMs?: number,
    ) => parts.conversation.events(query, waitMs),
  }),
  interrupt: callerMethod({ need: "act", run: (parts: Parts) => parts.conversation.interrupt() }),
  compact: callerMethod({ need: "oversee", run: (parts: Parts) => parts.conversation.compact() }),
};
