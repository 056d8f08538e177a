import type { Envelope } from "../../src/contract/envelope";
import { ok } from "../../src/contract/errors";
import { callerMethod, notFound, peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

const NO_SESSION = notFound("no such session");

/** Messages between sessions: an envelope delivered here, and what this session still owes others. */
export const messagingMethods = {
  /**
   * A cancel may outrun the child's creation (it leaves a tombstone, so the object opens for it);
   * anything else needs a session, and nothing reaches one that is deleted.
   */
  deliver: peerMethod({
    erased: NO_SESSION,
    deleting: NO_SESSION,
    absent: NO_SESSION,
    opens: (envelope: Envelope) => envelope.kind === "cancel-run",
    run: (parts: Parts, envelope: Envelope) => parts.delivery.deliver(envelope),
  }),
  outbox: callerMethod({ need: "read", run: (parts: Parts) => ok({ entries: parts.stores.outbox.list() }) }),
};
