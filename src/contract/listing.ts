import type { Usage } from "./events";
import type { Jurisdiction, LocationHint } from "./placement";

/** Discovery rows: a parent's children and its descendants (pre-order, with `parentId` and `depth`). */

export type ChildEntry =
  | {
      kind: "child";
      id: string;
      activity: "running" | "inactive";
      hasChildren: boolean;
      mode: "one-shot" | "continuable";
      label?: string;
      status: "running" | "waiting" | "idle";
      provider: string;
      createdAt: number;
      jurisdiction?: Jurisdiction;
      locationHint?: LocationHint;
      /** The tokens this session's own model steps used (when its model reported any). */
      usage?: Usage;
    }
  | {
      kind: "diagnostic";
      id: string;
      reason: "corrupt" | "unavailable" | "unsupported";
      createdAt: number;
      /** Its header names another parent: listed here, but it belongs elsewhere in the tree. */
      foreign?: true;
    };

/**
 * A descendant row; `subtreeUsage` sums the session's own usage and that of every session listed
 * below it (rows that could not be read add nothing).
 */
export type DescendantEntry = ChildEntry & { parentId: string; depth: number; subtreeUsage?: Usage };

/**
 * `GET /v1/sessions/:id/descendants`: the rows, and the tree's total (`subtreeUsage`): the listed
 * session's own usage plus that of every row.
 */
export interface DescendantListing {
  entries: DescendantEntry[];
  subtreeUsage?: Usage;
}
