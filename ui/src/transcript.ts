import type { EventStream, SessionEvent, StreamState, SubagentsClient } from "../../src/client";
import { type RenderContext, renderEvent } from "./render-event";

/**
 * The transcript of one session, fed by the SDK's reconnecting event stream: the whole log is
 * replayed, then live events are appended as they come. Switching sessions closes the old stream.
 * An asked approval carries Approve / Deny while it is pending in the tree's list and this log has
 * not yet recorded its decision; its entry's `data-pending` says which ("true" / "false").
 */

export interface TranscriptHooks extends RenderContext {
  /** Every event of the shown session (after it is rendered). */
  onEvent(sessionId: string, event: SessionEvent): void;
  onState(state: StreamState): void;
  /** The shown session's stream ended with an error (a refusal, or the session is gone). */
  streamFailed(sessionId: string, error: unknown): void;
  /** Decision controls for an approval still pending in the tree's list, else null. */
  approvalControls(approvalId: string): HTMLElement | null;
}

export class TranscriptView {
  readonly #container: HTMLElement;
  readonly #working: HTMLElement;
  readonly #hooks: TranscriptHooks;
  #stream: EventStream | undefined;
  #sessionId: string | undefined;
  #openTurn = false;
  /** Approvals whose decision this log has recorded. */
  #decided = new Set<string>();

  constructor(container: HTMLElement, working: HTMLElement, hooks: TranscriptHooks) {
    this.#container = container;
    this.#working = working;
    this.#hooks = hooks;
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  show(client: SubagentsClient, sessionId: string): void {
    if (this.#sessionId === sessionId && this.#stream) return;
    this.close();
    this.#sessionId = sessionId;
    this.#container.dataset.transcriptFor = sessionId;
    this.#container.replaceChildren();
    this.#decided.clear();
    this.#setWorking(false);
    const stream = client.stream(sessionId, {
      onState: (state) => {
        if (this.#stream === stream) this.#hooks.onState(state);
      },
    });
    this.#stream = stream;
    void this.#pump(stream, sessionId);
  }

  close(): void {
    this.#stream?.close();
    this.#stream = undefined;
    this.#sessionId = undefined;
    this.#container.replaceChildren();
    delete this.#container.dataset.transcriptFor;
    this.#setWorking(false);
  }

  /** Names children in lifecycle links once the tree knows their labels. */
  relabel(): void {
    for (const link of this.#container.querySelectorAll<HTMLElement>("[data-child-id]")) {
      const id = link.dataset.childId ?? "";
      const label = this.#hooks.labelOf(id);
      const wanted = label ? `${label} (${id.slice(0, 8)})` : id.slice(0, 8);
      if (link.textContent !== wanted) link.textContent = wanted;
    }
  }

  /** Shows or takes away the decision controls of every asked approval (the tree's list changed). */
  syncApprovals(): void {
    for (const el of this.#container.querySelectorAll<HTMLElement>('[data-event-type="approval/requested"]'))
      this.#syncApproval(el);
  }

  #syncApproval(el: HTMLElement): void {
    const id = el.dataset.approvalId ?? "";
    const slot = el.querySelector(".approval-slot");
    if (!slot) return;
    const controls = this.#decided.has(id) ? null : this.#hooks.approvalControls(id);
    el.dataset.pending = String(controls !== null);
    if (!controls) slot.replaceChildren();
    // controls already shown stay (with any reason being typed)
    else if (slot.childElementCount === 0) slot.appendChild(controls);
  }

  async #pump(stream: EventStream, sessionId: string): Promise<void> {
    try {
      for await (const event of stream) {
        if (this.#stream !== stream) break;
        this.#append(event);
        this.#hooks.onEvent(sessionId, event);
      }
    } catch (error) {
      if (this.#stream === stream) this.#hooks.streamFailed(sessionId, error);
    }
  }

  #append(event: SessionEvent): void {
    if (event.type === "turn/start") this.#setWorking(true);
    if (event.type === "turn/end") this.#setWorking(false);
    const el = renderEvent(event, this.#hooks);
    if (!el) return;
    if (event.type === "approval/requested") this.#syncApproval(el);
    if (event.type === "approval/decided") {
      const id = (event.data as { approvalId: string }).approvalId;
      this.#decided.add(id);
      for (const asked of this.#container.querySelectorAll<HTMLElement>(
        '[data-event-type="approval/requested"]',
      ))
        if (asked.dataset.approvalId === id) this.#syncApproval(asked);
    }
    const scroller = this.#container;
    const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    scroller.appendChild(el);
    if (atBottom) scroller.scrollTop = scroller.scrollHeight;
  }

  #setWorking(on: boolean): void {
    this.#openTurn = on;
    this.#working.hidden = !this.#openTurn;
  }
}
