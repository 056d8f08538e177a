import type { ApprovalDecision, PendingApproval, SubagentsClient } from "../../src/client";
import { h, replace } from "./dom";
import { ago, clock, shortId, summarize } from "./format";
import { attempt, note } from "./notice";

/**
 * The pending approvals of the shown tree: `GET /v1/sessions/:root/approvals` (the root's own and
 * every descendant's, oldest first), one row per approval with the tool, its arguments in one line,
 * the session that asked and how long ago, and Approve / Deny with an optional reason. Every
 * decision goes through the tree's root path (`POST /v1/sessions/:root/approvals/:approvalId`),
 * which may decide anything in its subtree; a refusal (ALREADY_DECIDED, NOT_FOUND) shows in the
 * error banner. Rows are kept by approval id, so a refresh never drops a reason being typed.
 */

export interface ApprovalsDeps {
  client(): SubagentsClient | undefined;
  /** The tree's root: whose list is shown and whose path decides. */
  rootId(): string | undefined;
  select(id: string): void;
  labelOf(id: string): string | undefined;
  /** A decision was sent (or refused): re-read the list and the tree now. */
  changed(): void;
}

/** The longest reason the API takes. */
const REASON_MAX = 2000;

export class ApprovalsPanel {
  readonly #panel: HTMLElement;
  readonly #list: HTMLElement;
  readonly #count: HTMLElement;
  readonly #deps: ApprovalsDeps;
  #pending: PendingApproval[] = [];
  #rows = new Map<string, HTMLElement>();
  #root: string | undefined;
  /** Numbers the reads: only the newest one's answer is shown. */
  #generation = 0;

  constructor(panel: HTMLElement, list: HTMLElement, count: HTMLElement, deps: ApprovalsDeps) {
    this.#panel = panel;
    this.#list = list;
    this.#count = count;
    this.#deps = deps;
  }

  /** Whether `approvalId` is still pending in the tree's list (as last read). */
  has(approvalId: string): boolean {
    return this.#pending.some((a) => a.approvalId === approvalId);
  }

  /** Pending approvals per asking session. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const a of this.#pending) counts.set(a.sessionId, (counts.get(a.sessionId) ?? 0) + 1);
    return counts;
  }

  /** Forgets the list (signed out, or another tree shown). */
  clear(): void {
    this.#generation++;
    this.#root = undefined;
    this.#pending = [];
    this.#paint();
  }

  /** Re-reads the root's pending approvals; answers whether the set of pending ids changed. */
  async refresh(client: SubagentsClient, rootId: string): Promise<boolean> {
    const generation = ++this.#generation;
    const pending = await client.approvals(rootId);
    if (generation !== this.#generation) return false;
    const before = this.#pending.map((a) => a.approvalId).join();
    if (this.#root !== rootId) this.#rows.clear();
    this.#root = rootId;
    this.#pending = pending;
    this.#paint();
    return before !== pending.map((a) => a.approvalId).join();
  }

  /** Names the asking sessions once the tree knows their labels (the links, not their rows). */
  relabel(): void {
    for (const link of this.#list.querySelectorAll<HTMLElement>(".session-link[data-asking-session]")) {
      const wanted = this.#sessionName(link.dataset.askingSession ?? "");
      if (link.textContent !== wanted) link.textContent = wanted;
    }
  }

  /**
   * Approve / Deny with a reason field for one approval, wherever it is shown (here and in a
   * transcript). Each control sends its own reason; the first decision wins, a different one
   * after it is refused as ALREADY_DECIDED.
   */
  controls(approvalId: string): HTMLElement {
    const reason = h("input", {
      name: "reason",
      placeholder: "reason (optional)",
      maxlength: REASON_MAX,
      "aria-label": "Reason for the decision",
    });
    const box = h("div", { class: "approval-actions", "data-approval-id": approvalId }, reason);
    const button = (decision: ApprovalDecision, label: string, cls: string) =>
      h(
        "button",
        {
          type: "button",
          class: cls,
          "data-action": decision,
          onclick: () => void this.#decide(approvalId, decision, reason.value.trim(), box),
        },
        label,
      );
    box.append(button("approve", "Approve", "approve"), button("deny", "Deny", "secondary deny"));
    return box;
  }

  async #decide(approvalId: string, decision: ApprovalDecision, reason: string, box: HTMLElement) {
    const client = this.#deps.client();
    const root = this.#deps.rootId();
    if (!client || !root) return;
    const buttons = [...box.querySelectorAll("button")];
    for (const b of buttons) b.disabled = true;
    const ok = await attempt(decision === "approve" ? "approving" : "denying", () =>
      client.decide(approvalId, decision, reason || undefined, { sessionId: root }),
    );
    for (const b of buttons) b.disabled = false;
    if (ok) note(`${decision === "approve" ? "approved" : "denied"} ${shortId(approvalId)}`);
    this.#deps.changed();
  }

  #paint(): void {
    const n = this.#pending.length;
    this.#panel.hidden = n === 0;
    this.#panel.dataset.pending = String(n);
    this.#count.textContent = String(n);
    const wanted = new Set(this.#pending.map((a) => a.approvalId));
    for (const id of [...this.#rows.keys()]) if (!wanted.has(id)) this.#rows.delete(id);
    const now = Date.now();
    const rows = this.#pending.map((a) => {
      let row = this.#rows.get(a.approvalId);
      if (!row) {
        row = this.#row(a);
        this.#rows.set(a.approvalId, row);
      }
      const age = row.querySelector("time");
      if (age) age.textContent = ago(a.requestedAt, now);
      return row;
    });
    // the same elements in the new order: a reason being typed stays where it is
    const current = [...this.#list.children];
    if (current.length !== rows.length || rows.some((r, i) => current[i] !== r)) replace(this.#list, rows);
  }

  #row(a: PendingApproval): HTMLElement {
    const asking = a.sessionId;
    return h(
      "li",
      {
        class: "approval-item",
        "data-approval-id": a.approvalId,
        "data-asking-session": asking,
        "data-tool": a.tool,
      },
      h(
        "div",
        { class: "approval-head" },
        h("code", { class: "tool-name" }, a.tool),
        h("time", { title: `asked at ${clock(a.requestedAt)}` }, ago(a.requestedAt)),
      ),
      h("code", { class: "approval-args", title: summarize(a.args, 2000) }, summarize(a.args)),
      h(
        "div",
        { class: "approval-who" },
        "asked by ",
        h(
          "button",
          {
            type: "button",
            class: "link session-link",
            "data-asking-session": asking,
            onclick: () => this.#deps.select(asking),
          },
          this.#sessionName(asking),
        ),
      ),
      this.controls(a.approvalId),
    );
  }

  #sessionName(id: string): string {
    const label = this.#deps.labelOf(id);
    return label ? `${label} (${shortId(id)})` : shortId(id);
  }
}
