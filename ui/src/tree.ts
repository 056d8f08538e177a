import type { SubagentsClient } from "../../src/client";
import { h, replace } from "./dom";
import { childStatus, type DisplayStatus, shortId } from "./format";

/**
 * The live tree of a top-level session: the root (GET /v1/sessions/:id) and its descendants
 * (GET /v1/sessions/:id/descendants, stable pre-order), one row per session with its state, mode,
 * label, depth and provider, and a badge on each session with approvals pending (counts from the
 * approvals panel). Refreshes are serialized; one asked for during another runs after it.
 */

export interface TreeNode {
  id: string;
  parentId: string | null;
  depth: number;
  status: DisplayStatus;
  mode?: string;
  label?: string;
  provider?: string;
  reason?: string;
  /** Tokens (input plus output) of this session and everything below it. */
  tokens?: number;
}

export class TreeView {
  readonly #container: HTMLElement;
  readonly #onSelect: (id: string) => void;
  #nodes = new Map<string, TreeNode>();
  /** The rows as last loaded, in pre-order. */
  #order: TreeNode[] = [];
  /** Pending approvals per asking session. */
  #pending = new Map<string, number>();
  #rootId: string | undefined;
  #selected: string | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #painted = "";

  constructor(container: HTMLElement, onSelect: (id: string) => void) {
    this.#container = container;
    this.#onSelect = onSelect;
  }

  get rootId(): string | undefined {
    return this.#rootId;
  }

  node(id: string): TreeNode | undefined {
    return this.#nodes.get(id);
  }

  /** How many sessions below `id` the tree holds (as last loaded). */
  below(id: string): number {
    const under = new Set([id]);
    // pre-order: a session's descendants come after it
    for (const n of this.#order) if (n.parentId !== null && under.has(n.parentId)) under.add(n.id);
    return under.size - 1;
  }

  /** Whether anything in the tree still works (so polling is worth it). */
  busy(): boolean {
    for (const n of this.#nodes.values()) if (n.status === "running" || n.status === "waiting") return true;
    return false;
  }

  setRoot(rootId: string | undefined): void {
    if (rootId === this.#rootId) return;
    this.#rootId = rootId;
    this.#nodes = new Map();
    this.#order = [];
    this.#pending = new Map();
    this.#painted = "";
    this.#container.replaceChildren();
  }

  select(id: string | undefined): void {
    this.#selected = id;
    for (const el of this.#container.querySelectorAll<HTMLElement>("[data-session-id]"))
      el.setAttribute("aria-current", String(el.dataset.sessionId === id));
  }

  /** Marks the sessions with approvals pending (session id -> how many); repaints if that changed. */
  setPending(counts: Map<string, number>): void {
    this.#pending = counts;
    if (this.#order.length > 0) this.#render(this.#order);
  }

  /** Re-reads the tree from the API (coalescing overlapping calls). */
  refresh(client: SubagentsClient): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#load(client);
        } while (this.#again);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async #load(client: SubagentsClient): Promise<void> {
    const rootId = this.#rootId;
    if (!rootId) return;
    const [root, listing] = await Promise.all([client.getSession(rootId), client.descendantListing(rootId)]);
    if (rootId !== this.#rootId) return;
    const entries = listing.entries;
    // the tree's total, as the API sums it
    const rootTokens = tokensOf(listing.subtreeUsage);
    const nodes: TreeNode[] = [
      {
        id: root.id,
        parentId: null,
        depth: 0,
        status: root.status,
        ...(root.label === undefined ? {} : { label: root.label }),
        ...(rootTokens > 0 ? { tokens: rootTokens } : {}),
      },
    ];
    for (const e of entries) {
      if (e.kind === "diagnostic") {
        nodes.push({
          id: e.id,
          parentId: e.parentId,
          depth: e.depth,
          status: childStatus(e),
          reason: e.reason,
        });
        continue;
      }
      nodes.push({
        id: e.id,
        parentId: e.parentId,
        depth: e.depth,
        status: childStatus(e),
        mode: e.mode,
        provider: e.provider,
        ...(e.label === undefined ? {} : { label: e.label }),
        ...(tokensOf(e.subtreeUsage) > 0 ? { tokens: tokensOf(e.subtreeUsage) } : {}),
      });
    }
    this.#nodes = new Map(nodes.map((n) => [n.id, n]));
    this.#order = nodes;
    this.#render(nodes);
  }

  #render(nodes: TreeNode[]): void {
    // an unchanged tree keeps its elements (nothing flickers, nothing a click holds goes away)
    const painted = JSON.stringify([nodes, nodes.map((n) => this.#pending.get(n.id) ?? 0)]);
    if (painted === this.#painted && this.#container.childElementCount > 0) return;
    this.#painted = painted;
    replace(
      this.#container,
      nodes.map((n) => {
        const pending = this.#pending.get(n.id) ?? 0;
        return h(
          "li",
          {
            class: `node status-${n.status}`,
            "aria-current": String(n.id === this.#selected),
            "data-session-id": n.id,
            "data-status": n.status,
            "data-depth": n.depth,
            "data-mode": n.mode ?? "top-level",
            "data-provider": n.provider,
            "data-parent-id": n.parentId ?? undefined,
            "data-tokens": n.tokens,
            "data-pending-approvals": pending || undefined,
            style: `--depth: ${n.depth}`,
          },
          h(
            "button",
            { type: "button", class: "node-button", onclick: () => this.#onSelect(n.id) },
            h("span", { class: "dot", "aria-hidden": "true" }),
            h("span", { class: "node-label" }, n.label ?? (n.depth === 0 ? "session" : "child")),
            h("span", { class: "node-id" }, shortId(n.id)),
            // one cell for every badge, side by side: two items in one grid area would overlap
            h(
              "span",
              { class: "badges" },
              h("span", { class: "badge status" }, n.status),
              pending === 0
                ? null
                : h(
                    "span",
                    { class: "badge approval", title: "tool calls of this session waiting for a decision" },
                    pending === 1 ? "1 approval" : `${pending} approvals`,
                  ),
              n.tokens === undefined
                ? null
                : h(
                    "span",
                    { class: "badge tokens", title: "tokens used by this session and its subtree" },
                    `${n.tokens} tok`,
                  ),
            ),
            h(
              "span",
              { class: "node-meta" },
              n.depth === 0
                ? "top-level"
                : [n.mode ?? n.reason ?? "?", n.provider ? ` · ${n.provider}` : "", ` · depth ${n.depth}`],
            ),
          ),
        );
      }),
    );
  }
}

function tokensOf(usage: { inputTokens: number; outputTokens: number } | undefined): number {
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}
