import type { ChildEntry } from "../../src/contract/listing";
import { ok } from "../../src/contract/errors";
import { callerMethod, notFound, peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

/**
 * A session's children: listed with its descendants by callers, its row in its parent's listing,
 * its place in its tree, and a child that left on its own.
 */
export const childrenMethods = {
  listChildren: callerMethod({
    need: "read",
    run: async (parts: Parts) => ok({ entries: await parts.listings.children() }),
  }),
  listDescendants: callerMethod({
    need: "read",
    run: async (parts: Parts) => ok(await parts.listings.descendants()),
  }),
  /** Its row in its parent's listing: deleted, it leaves the listing; never created, it is a diagnostic. */
  entry: peerMethod({
    erased: (_expectedParent: string): ChildEntry | null => null,
    deleting: (_expectedParent: string): ChildEntry | null => null,
    absent: (_expectedParent: string): ChildEntry | null => ({
      kind: "diagnostic",
      id: "",
      reason: "unavailable",
      createdAt: 0,
    }),
    run: (parts: Parts, expectedParent: string) => parts.listings.entry(expectedParent),
  }),
  childEntries: peerMethod({
    absent: async (): Promise<ChildEntry[]> => [],
    deleting: async (): Promise<ChildEntry[]> => [],
    run: (parts: Parts) => parts.listings.childEntries(),
  }),
  /** At a tree's root: a slot for a session below one of its descendants (MAX_SESSIONS_PER_TREE). */
  reserveTreeSlot: peerMethod({
    absent: notFound("no such session"), // never created: stays empty
    run: (parts: Parts, childId: string) => parts.places.reserve(childId),
  }),
  /** A child deleted on its own left this session (its runs end `aborted`, it leaves the listings). */
  childDeleted: peerMethod({
    absent: (_childId: string) => undefined,
    run: (parts: Parts, childId: string) => parts.departures.childDeleted(childId),
  }),
};
