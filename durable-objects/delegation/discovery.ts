import { compact } from "../../src/core/compact";
import { foldDescriptor } from "../../src/core/descriptor";
import type { ChildEntry, DescendantEntry, DescendantListing } from "../../src/contract/listing";
import { preOrder, publicEntry, treeUsage, withSubtreeUsage } from "../../src/core/descendants";
import { placementOf } from "../../src/core/placement";
import type { SessionContext } from "../session/session-context";
import { sessionStatus } from "../session/session-view";

/**
 * Discovery (semantics.md §9): a parent's children table is the cached rung (id, creation time); each
 * child's own `entry()` is the cold rung (identity from its descriptors, last wins, and activity),
 * asked with bounded concurrency. A child that cannot answer is an `unavailable` diagnostic and
 * never hides its healthy siblings.
 */

const LISTING_CONCURRENCY = 4;

/** This session as a row of its parent's listing; null while it has no descriptor. */
export function entryOf(
  ctx: SessionContext,
  expectedParent: string,
  facts: { status: "running" | "waiting" | "idle"; live: boolean },
): ChildEntry | null {
  const header = ctx.header();
  const createdAt = header?.createdAt ?? 0;
  if (!header) return { kind: "diagnostic", id: "", reason: "unavailable", createdAt };
  if (header.parentSession !== expectedParent) {
    return { kind: "diagnostic", id: header.id, reason: "corrupt", createdAt, foreign: true };
  }
  let identity: ReturnType<typeof foldDescriptor>;
  try {
    identity = foldDescriptor(
      ctx.stores.log
        .ofTypes(["subagent/descriptor"])
        .map((e) => e.data)
        .slice(-1),
    );
  } catch {
    return { kind: "diagnostic", id: header.id, reason: "corrupt", createdAt };
  }
  // no descriptor: a running child is still being created (omitted); a settled one is corrupt
  if (!identity)
    return facts.live ? null : { kind: "diagnostic", id: header.id, reason: "corrupt", createdAt };
  return {
    kind: "child",
    id: header.id,
    activity: facts.live ? "running" : "inactive",
    hasChildren: ctx.stores.children.count() > 0,
    mode: identity.mode,
    ...compact({ label: identity.label }),
    status: facts.status,
    provider: identity.provider,
    createdAt,
    ...placementOf(header),
    ...compact({ usage: ctx.stores.usage.own() }),
  };
}

/** This session's children, in `createdAt`-then-id order. */
export async function childEntriesOf(ctx: SessionContext): Promise<ChildEntry[]> {
  const self = ctx.header()?.id;
  if (self === undefined) return [];
  const rows = ctx.stores.children.all();
  const entries: (ChildEntry | null)[] = new Array(rows.length).fill(null);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < rows.length; i = next++) {
      const row = rows[i]!;
      try {
        const entry = await ctx.session(row.childId).entry(self);
        entries[i] = entry && { ...entry, id: row.childId, createdAt: row.createdAt };
      } catch {
        entries[i] = { kind: "diagnostic", id: row.childId, reason: "unavailable", createdAt: row.createdAt };
      }
    }
  };
  await Promise.all(Array.from({ length: LISTING_CONCURRENCY }, worker));
  return entries.filter((e): e is ChildEntry => e !== null);
}

/** Every session below this one in stable pre-order, with `parentId` and `depth`. */
export async function descendantsOf(ctx: SessionContext): Promise<DescendantEntry[]> {
  const self = ctx.header()!.id;
  const rows = await preOrder(
    self,
    // a child that cannot list its own children keeps its row (a diagnostic) and adds nothing
    (id) =>
      id === self
        ? childEntriesOf(ctx)
        : ctx
            .session(id)
            .childEntries()
            .catch(() => []),
    (entry) => entry.kind === "diagnostic" || entry.hasChildren,
  );
  return withSubtreeUsage(rows);
}

/** The descendants listing: the rows, and the tree's total from the walk that read them. */
export async function descendantListing(ctx: SessionContext): Promise<DescendantListing> {
  const entries = await descendantsOf(ctx);
  return { entries, ...compact({ subtreeUsage: treeUsage(ctx.stores.usage.own(), entries) }) };
}

/**
 * This session as a row of its parent's listing : live while a continuable child
 * has an epoch running, or while any other session is not idle.
 */
export function listingEntry(ctx: SessionContext, expectedParent: string): ChildEntry | null {
  const status = sessionStatus(ctx);
  const live =
    ctx.header()?.mode === "continuable" ? ctx.stores.activation.get() !== undefined : status !== "idle";
  return entryOf(ctx, expectedParent, { status, live });
}

/** Who is below a session, as its callers and its parent list them. */
export class Listings {
  readonly #ctx: SessionContext;

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  /** `GET …/children`: the children's public rows. */
  async children(): Promise<ChildEntry[]> {
    return (await childEntriesOf(this.#ctx)).map(publicEntry);
  }

  /** `GET …/descendants`. */
  descendants(): Promise<DescendantListing> {
    return descendantListing(this.#ctx);
  }

  /** The children's rows as a parent's own listing reads them. */
  childEntries(): Promise<ChildEntry[]> {
    return childEntriesOf(this.#ctx);
  }

  /** This session as a row of its parent's listing. */
  entry(expectedParent: string): ChildEntry | null {
    return listingEntry(this.#ctx, expectedParent);
  }
}
