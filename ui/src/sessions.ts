import type { DirectoryEntry, SubagentsClient } from "../../src/client";
import { field, h, replace } from "./dom";
import { shortId, when } from "./format";
import { attempt, note } from "./notice";

/**
 * The session directory for the admin token (GET /v1/sessions, newest first, "more" follows the
 * cursor) with each session's state from GET /v1/sessions/:id, and a form that creates one.
 */

const PAGE = 25;
const CONCURRENCY = 6;

export class SessionList {
  readonly #list: HTMLElement;
  readonly #more: HTMLButtonElement;
  readonly #onSelect: (id: string) => void;
  #entries: DirectoryEntry[] = [];
  #status = new Map<string, string>();
  #cursor: string | null = null;
  #selected: string | undefined;
  #painted = "";
  /** Sessions deleted from this page: the directory forgets them a moment later, the list at once. */
  #forgotten = new Set<string>();

  constructor(
    list: HTMLElement,
    more: HTMLButtonElement,
    form: HTMLFormElement,
    onSelect: (id: string) => void,
  ) {
    this.#list = list;
    this.#more = more;
    this.#onSelect = onSelect;
    this.client = undefined;
    more.addEventListener("click", () => void attempt("loading sessions", () => this.#loadMore()));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void attempt("creating a session", () => this.#create(form));
    });
  }

  client: SubagentsClient | undefined;

  async reload(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const page = await client.listSessions({ limit: Math.max(PAGE, this.#entries.length) });
    this.#entries = page.sessions.filter((e) => !this.#forgotten.has(e.id));
    this.#cursor = page.next;
    await this.#statuses(this.#entries.map((e) => e.id));
    this.#render();
  }

  /** Another view learned a session's state: show the same here. */
  setStatus(id: string, status: string): void {
    if (!this.#entries.some((e) => e.id === id) || this.#status.get(id) === status) return;
    this.#status.set(id, status);
    this.#render();
  }

  /** A session was deleted: its row goes now, and stays gone while the directory catches up. */
  forget(id: string): void {
    this.#forgotten.add(id);
    this.#entries = this.#entries.filter((e) => e.id !== id);
    this.#status.delete(id);
    this.#render();
  }

  select(id: string | undefined): void {
    this.#selected = id;
    for (const el of this.#list.querySelectorAll<HTMLElement>("[data-session-id]"))
      el.setAttribute("aria-current", String(el.dataset.sessionId === id));
  }

  clear(): void {
    this.#painted = "";
    this.#entries = [];
    this.#status.clear();
    this.#cursor = null;
    this.#forgotten.clear();
    this.#list.replaceChildren();
  }

  async #loadMore(): Promise<void> {
    const client = this.client;
    if (!client || !this.#cursor) return;
    const page = await client.listSessions({ limit: PAGE, cursor: this.#cursor });
    this.#entries.push(...page.sessions.filter((e) => !this.#forgotten.has(e.id)));
    this.#cursor = page.next;
    await this.#statuses(page.sessions.map((e) => e.id));
    this.#render();
  }

  async #create(form: HTMLFormElement): Promise<void> {
    const client = this.client;
    if (!client) return;
    const label = field(form, "label");
    const model = field(form, "model");
    const created = await client.createSession({
      ...(label ? { label } : {}),
      ...(model ? { model } : {}),
    });
    form.reset();
    note(`created session ${shortId(created.id)}`);
    await this.reload();
    this.#onSelect(created.id);
  }

  async #statuses(ids: string[]): Promise<void> {
    const client = this.client;
    if (!client) return;
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < ids.length; i = next++) {
        const id = ids[i]!;
        try {
          this.#status.set(id, (await client.getSession(id)).status);
        } catch {
          this.#status.set(id, "unavailable");
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  }

  #render(): void {
    this.#more.hidden = this.#cursor === null;
    // unchanged rows stay the same elements (nothing flickers, nothing a click holds goes away)
    const painted = JSON.stringify([this.#entries, [...this.#status]]);
    if (painted === this.#painted && this.#list.childElementCount > 0) return;
    this.#painted = painted;
    if (this.#entries.length === 0) {
      replace(this.#list, h("li", { class: "empty" }, "No sessions yet."));
      return;
    }
    replace(
      this.#list,
      this.#entries.map((e) => {
        const status = this.#status.get(e.id) ?? "idle";
        return h(
          "li",
          {
            class: `session-item status-${status}`,
            "data-session-id": e.id,
            "data-status": status,
            "aria-current": String(e.id === this.#selected),
          },
          h(
            "button",
            { type: "button", class: "node-button", onclick: () => this.#onSelect(e.id) },
            h("span", { class: "dot", "aria-hidden": "true" }),
            h("span", { class: "node-label" }, e.label ?? "session"),
            h("span", { class: "node-id" }, shortId(e.id)),
            h("span", { class: "badges" }, h("span", { class: "badge status" }, status)),
            h("span", { class: "node-meta" }, when(e.createdAt)),
          ),
        );
      }),
    );
  }
}
