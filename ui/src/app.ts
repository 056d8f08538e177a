import {
  type EventStream,
  type ProviderInfo,
  type SessionEvent,
  type SessionView,
  type StreamState,
  SubagentError,
  SubagentsClient,
} from "../../src/client";
import { ApprovalsPanel } from "./approvals";
import { Controls } from "./controls";
import { $, h, replace } from "./dom";
import { shortId, when } from "./format";
import { attempt, clearError, note, showError } from "./notice";
import { SchedulesPanel } from "./schedules";
import { SessionList } from "./sessions";
import { forgetToken, saveToken } from "./token-store";
import { SPAN_EVENTS, TracePanel } from "./trace";
import { TranscriptView } from "./transcript";
import { type TreeNode, TreeView } from "./tree";

/**
 * The dashboard: who is signed in, which top-level session's tree is shown and which session is
 * selected (kept in the URL fragment: ids only, never the token), and what keeps the views live:
 * the selected session's event stream, a stream on the tree's root, and a light poll for deeper
 * changes the root's log does not show. Every refresh also re-reads the tree's pending approvals
 * (asked and decided approvals reach the root's log from anywhere in the tree, so its stream
 * brings them at once) and the selected session's schedules (its own log shows them made,
 * deleted and fired). A deleted session leaves the page: its tree's root clears the selection
 * and leaves the list, a session below it hands the selection to its parent. Beside the
 * transcript, a tab shows the selected session's trace (trace.ts), read again while it is shown
 * and its session's log adds spans, or anything in the tree still works.
 */

const REFRESH_EVENTS = new Set([
  "subagent/start",
  "subagent/end",
  "turn/start",
  "turn/end",
  "agent/inbox/inserted",
  "approval/requested",
  "approval/decided",
]);

/** Whether an event of the selected session's log changes its schedules (made, deleted, fired). */
function touchesSchedules(event: SessionEvent): boolean {
  if (event.type === "schedule/created" || event.type === "schedule/deleted") return true;
  if (event.type !== "user/message" && event.type !== "agent/inbox/inserted") return false;
  return (event.data as { source?: { kind?: string } }).source?.kind === "schedule";
}

export class Dashboard {
  client: SubagentsClient | undefined;
  #providers: ProviderInfo[] = [];
  #selected: string | undefined;
  #view: SessionView | undefined;
  #rootWatch: EventStream | undefined;
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  #pollTimer: ReturnType<typeof setTimeout> | undefined;
  #listTimer: ReturnType<typeof setInterval> | undefined;
  /** Sessions deleted from this page (and being deleted): their streams' ends are expected. */
  #gone = new Set<string>();
  readonly tree: TreeView;
  readonly list: SessionList;
  readonly transcript: TranscriptView;
  readonly controls: Controls;
  readonly approvals: ApprovalsPanel;
  readonly schedules: SchedulesPanel;
  readonly trace: TracePanel;

  constructor() {
    this.tree = new TreeView($("#tree"), (id) => this.#pick(id));
    this.list = new SessionList($("#session-list"), $("#more-sessions"), $("#new-session"), (id) =>
      this.#pick(id, id),
    );
    this.approvals = new ApprovalsPanel($("#approvals-panel"), $("#approvals"), $("#approvals-count"), {
      client: () => this.client,
      rootId: () => this.tree.rootId,
      select: (id) => this.#pick(id),
      labelOf: (id) => this.tree.node(id)?.label,
      changed: () => this.scheduleRefresh(0),
    });
    this.transcript = new TranscriptView($("#transcript"), $("#working"), {
      select: (id) => this.select(id),
      labelOf: (id) => this.tree.node(id)?.label,
      onEvent: (_id, event) => this.#onEvent(event),
      onState: (state) => this.#live(state),
      streamFailed: (id, error) => {
        if (!this.#gone.has(id)) showError(error, "event stream");
      },
      approvalControls: (approvalId) =>
        this.approvals.has(approvalId) ? this.approvals.controls(approvalId) : null,
    });
    this.controls = new Controls($("#controls"), {
      client: () => this.client,
      selected: () => this.#selectedNode(),
      providers: () => this.#providers,
      changed: () => this.scheduleRefresh(0),
      below: (id) => this.tree.below(id),
      remove: (node) => this.#delete(node),
    });
    this.schedules = new SchedulesPanel($<HTMLDetailsElement>("#schedules"), {
      client: () => this.client,
      gone: (id) => this.#gone.has(id),
    });
    this.trace = new TracePanel($("#trace"), {
      client: () => this.client,
      gone: (id) => this.#gone.has(id),
    });
    for (const tab of document.querySelectorAll<HTMLButtonElement>("#session-views [data-view]"))
      tab.addEventListener("click", () =>
        this.showView(tab.dataset.view === "trace" ? "trace" : "transcript"),
      );
    window.addEventListener("hashchange", () => this.#fromHash());
  }

  /** Shows the selected session's transcript or its trace (the choice stays as sessions change). */
  showView(view: "transcript" | "trace"): void {
    $("#session-panel").dataset.view = view;
    for (const tab of document.querySelectorAll<HTMLElement>("#session-views [data-view]"))
      tab.setAttribute("aria-selected", String(tab.dataset.view === view));
    $("#transcript").hidden = view !== "transcript";
    this.trace.setVisible(view === "trace");
  }

  /** Checks the token against the API; on success keeps it (this tab only) and opens the dashboard. */
  async signIn(token: string): Promise<boolean> {
    // the API lives next to the dashboard: under the same base path
    const client = new SubagentsClient({
      baseUrl: new URL(".", location.href).href.replace(/\/$/, ""),
      token,
    });
    const own = client.tokenSession;
    try {
      if (own) await client.getSession(own);
      else await client.listSessions({ limit: 1 });
    } catch (error) {
      showError(error, "sign-in");
      // a refused token is forgotten; a server that is away for a moment is not a reason to
      if (error instanceof SubagentError && error.status >= 400 && error.status < 500) forgetToken();
      document.body.dataset.ready = "true";
      return false;
    }
    saveToken(token);
    clearError();
    this.client = client;
    this.list.client = own ? undefined : client;
    document.body.dataset.role = own ? "session" : "admin";
    $("#who").textContent = own ? `session ${shortId(own)}` : "admin";
    $("#signin").hidden = true;
    $("#dashboard").hidden = false;
    $("#sign-out").hidden = false;
    $("#sessions-panel").hidden = !!own;
    this.#providers = await client.listProviders().catch(() => []);
    if (!own) {
      await attempt("loading sessions", () => this.list.reload());
      // new sessions (made elsewhere) appear, and the states stay current
      this.#listTimer = setInterval(() => {
        if (document.visibilityState === "visible") void this.list.reload().catch(() => {});
      }, 3000);
    }
    if (!this.#fromHash()) {
      if (own) this.select(own, own);
      else this.#showEmpty();
    }
    this.#poll();
    document.body.dataset.ready = "true";
    return true;
  }

  signOut(): void {
    forgetToken();
    this.client = undefined;
    this.#selected = undefined;
    this.transcript.close();
    this.#rootWatch?.close();
    this.#rootWatch = undefined;
    this.tree.setRoot(undefined);
    this.approvals.clear();
    this.schedules.clear();
    this.trace.clear();
    this.list.clear();
    for (const t of [this.#refreshTimer, this.#pollTimer]) if (t) clearTimeout(t);
    if (this.#listTimer) clearInterval(this.#listTimer);
    history.replaceState(null, "", location.pathname);
    delete document.body.dataset.role;
    $("#dashboard").hidden = true;
    $("#sign-out").hidden = true;
    $("#signin").hidden = false;
    $("#who").textContent = "";
    clearError();
  }

  /** Shows session `id`; `root` names the top-level session whose tree holds it (default: the current). */
  select(id: string, root?: string): void {
    const client = this.client;
    if (!client) return;
    const own = client.tokenSession;
    const rootId = root ?? this.tree.rootId ?? own ?? id;
    if (rootId !== this.tree.rootId) {
      this.#watchRoot(client, rootId);
      this.approvals.clear();
    }
    this.tree.setRoot(rootId);
    this.#selected = id;
    this.#view = undefined;
    this.tree.select(id);
    this.list.select(rootId);
    const hash = `#root=${rootId}&session=${id}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
    $("#session-panel").hidden = false;
    $("#empty").hidden = true;
    this.transcript.show(client, id);
    this.schedules.show(id);
    this.trace.show(id);
    this.#header();
    this.controls.render();
    void client.getSession(id).then(
      (view) => {
        if (this.#selected !== id) return;
        this.#view = view;
        this.#header();
      },
      (error: unknown) => showError(error, `session ${shortId(id)}`),
    );
    this.scheduleRefresh(0);
  }

  /** A person picked a session: on a narrow screen, bring its transcript into view. */
  #pick(id: string, root?: string): void {
    this.select(id, root);
    if (window.matchMedia("(max-width: 760px)").matches)
      $("#session-panel").scrollIntoView({ block: "start" });
  }

  /** Re-reads the tree (debounced); the list and the header follow. */
  scheduleRefresh(delayMs = 150): void {
    if (this.#refreshTimer) clearTimeout(this.#refreshTimer);
    this.#refreshTimer = setTimeout(() => void this.#refresh(), delayMs);
  }

  async #refresh(): Promise<void> {
    const client = this.client;
    const rootId = this.tree.rootId;
    if (!client || !rootId) return;
    const [tree, approvals, schedules] = await Promise.allSettled([
      this.tree.refresh(client),
      this.approvals.refresh(client, rootId),
      this.schedules.refresh(client),
    ]);
    if (rootId !== this.tree.rootId) return;
    if (schedules.status === "rejected") showError(schedules.reason, "reading the schedules");
    if (approvals.status === "rejected") showError(approvals.reason, "reading the approvals");
    else {
      this.tree.setPending(this.approvals.counts());
      this.transcript.syncApprovals();
    }
    if (tree.status === "rejected") {
      showError(tree.reason, "reading the tree");
      return;
    }
    this.tree.select(this.#selected);
    // spans of sessions below the selected one show up in no log this page follows
    if (this.tree.busy() || this.trace.live()) this.trace.soon();
    this.transcript.relabel();
    this.approvals.relabel();
    const root = this.tree.node(this.tree.rootId);
    if (root) this.list.setStatus(root.id, root.status);
    this.#header();
    this.controls.render();
  }

  #poll(): void {
    const again = () => {
      this.#pollTimer = setTimeout(() => this.#poll(), this.tree.busy() ? 1500 : 5000);
    };
    if (this.client && document.visibilityState === "visible") void this.#refresh().finally(again);
    else again();
  }

  #onEvent(event: SessionEvent): void {
    if (REFRESH_EVENTS.has(event.type)) this.scheduleRefresh();
    if (touchesSchedules(event)) this.schedules.soon();
    if (SPAN_EVENTS.has(event.type)) this.trace.soon();
  }

  /**
   * Deletes `node` and its tree (`DELETE /v1/sessions/:id`); answers whether it went. The tree's
   * root leaves the list and the selection clears; a session below the root hands the selection
   * to its parent. A refusal (403 for a top-level session with a session token) shows in the banner.
   */
  async #delete(node: TreeNode): Promise<boolean> {
    const client = this.client;
    if (!client) return false;
    const name = node.label ? `${node.label} (${shortId(node.id)})` : shortId(node.id);
    this.#gone.add(node.id); // its stream ends as the answer comes: no banner for that
    try {
      await client.deleteSession(node.id);
    } catch (error) {
      this.#gone.delete(node.id);
      showError(error, `deleting ${name}`);
      return false;
    }
    clearError();
    note(`deleted ${name}${node.parentId ? "" : " and its tree"}`);
    if (this.client !== client) return true;
    if (node.parentId === null || node.id === this.tree.rootId) {
      this.list.forget(node.id);
      if (this.tree.rootId === node.id) this.#clearSelection();
      void this.list.reload().catch(() => {});
    } else if (this.#selected === node.id) {
      this.select(node.parentId);
    } else {
      this.scheduleRefresh(0);
    }
    return true;
  }

  /** Nothing selected: the tree, its streams and the session panel go, the empty panel shows. */
  #clearSelection(): void {
    this.#selected = undefined;
    this.#view = undefined;
    this.transcript.close();
    this.schedules.clear();
    this.trace.clear();
    this.#rootWatch?.close();
    this.#rootWatch = undefined;
    this.tree.setRoot(undefined);
    this.approvals.clear();
    this.list.select(undefined);
    this.controls.render();
    history.replaceState(null, "", location.pathname + location.search);
    const live = $("#live");
    live.dataset.state = "closed";
    live.textContent = "";
    this.#showEmpty();
  }

  /** Live updates of the tree's root, for tree changes while another session is selected. */
  #watchRoot(client: SubagentsClient, rootId: string): void {
    this.#rootWatch?.close();
    this.#rootWatch = undefined;
    void (async () => {
      try {
        const { lastSeq } = await client.getSession(rootId);
        if (this.tree.rootId !== rootId || this.client !== client) return;
        const stream = client.stream(rootId, { after: lastSeq });
        this.#rootWatch = stream;
        for await (const event of stream) if (REFRESH_EVENTS.has(event.type)) this.scheduleRefresh();
      } catch {
        // the poll still keeps the tree current
      }
    })();
  }

  #selectedNode(): TreeNode | undefined {
    const id = this.#selected;
    if (!id) return undefined;
    const node = this.tree.node(id);
    if (node) return node;
    if (id === this.tree.rootId) return { id, parentId: null, depth: 0, status: "idle" };
    return this.#view
      ? {
          id,
          parentId: this.#view.parentSession,
          depth: this.#view.delegationDepth,
          status: this.#view.status,
        }
      : undefined;
  }

  #header(): void {
    const node = this.#selectedNode();
    const view = this.#view;
    if (!node) return;
    const status = node.status;
    replace(
      $("#session-title"),
      node.label ?? view?.label ?? (node.parentId ? "child session" : "session"),
      h("span", { class: `badge status status-${status}` }, status),
    );
    const parent = node.parentId;
    replace(
      $("#session-meta"),
      h("span", {}, h("code", { class: "full-id" }, node.id)),
      node.mode ? h("span", {}, node.mode) : h("span", {}, "top-level"),
      node.provider ? h("span", {}, `provider ${node.provider}`) : null,
      h("span", {}, `depth ${node.depth}`),
      view ? h("span", {}, `model ${view.model}`) : null,
      // which MCP servers it has (the API never shows their tokens)
      view?.mcpServers?.length
        ? h(
            "span",
            { "data-mcp-servers": view.mcpServers.map((m) => m.name).join(",") },
            `MCP ${view.mcpServers.map((m) => m.name).join(", ")}`,
          )
        : null,
      view?.budget ? h("span", {}, `budget ${view.budget.used}/${view.budget.tokens} tok`) : null,
      view ? h("span", {}, `created ${when(view.createdAt)}`) : null,
      parent
        ? h(
            "button",
            { type: "button", class: "link", onclick: () => this.select(parent) },
            `parent ${shortId(parent)}`,
          )
        : null,
    );
  }

  #live(state: StreamState): void {
    const el = $("#live");
    el.dataset.state = state;
    el.textContent = state === "open" ? "live" : state === "closed" ? "offline" : `${state}…`;
  }

  #showEmpty(): void {
    $("#session-panel").hidden = true;
    $("#empty").hidden = false;
  }

  /** Restores the selection from `#root=<id>&session=<id>`; answers whether there was one. */
  #fromHash(): boolean {
    if (!this.client) return false;
    const params = new URLSearchParams(location.hash.slice(1));
    const session = params.get("session");
    if (!session) return false;
    // a session token's tree is always its own session's
    const root = this.client.tokenSession ?? params.get("root") ?? session;
    if (session === this.#selected && root === this.tree.rootId) return true;
    this.select(session, root);
    return true;
  }
}
