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
    }
  | {
      kind: "diagnostic";
      id: string;
      reason: "corrupt" | "unavailable" | "unsupported";
      createdAt: number;
      /** Its header names another parent: listed here, but it belongs elsewhere in the tree. */
      foreign?: true;
    };

export type DescendantEntry = ChildEntry & { parentId: string; depth: number };
