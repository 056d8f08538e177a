import type { DriverStores } from "./driver-stores";

/**
 * A session without a model (`"model": "external"`, docs/semantics.md §14), driven from outside over MCP:
 * its turn driver runs no turns. What reaches its inbox (user messages, relays, reports,
 * settlement notices) is recorded in its log as `user/message`, in FIFO order, without a turn,
 * so the outside agent reads it from the log.
 */
export const EXTERNAL_MODEL = "external";

/** Inside a transaction: records every pending inbox item; true when it recorded something. */
export function recordInbox(stores: Pick<DriverStores, "inbox" | "log">): boolean {
  const pending = stores.inbox.pending();
  for (const item of pending) {
    const claimed = stores.inbox.claim(item.messageId);
    if (claimed)
      stores.log.append("user/message", {
        messageId: item.messageId,
        content: claimed.content,
        source: claimed.source,
      });
  }
  return pending.length > 0;
}
