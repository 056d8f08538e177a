import { compact } from "../../../src/core/compact";
import { isEmptyContent } from "../../../src/contract/content";
import type { ReportEnvelope, SettledEnvelope } from "../../../src/contract/envelope";
import type { InboxLane, MessageSource } from "../../../src/contract/events";
import type { SessionContext } from "../../session/session-context";
import type { Drains } from "./drains";

/**
 * A continuable parent's record of its children's epochs and what they send (semantics.md §6),
 * written inside the transaction that receives it: an epoch's `subagent/start` (once), its one
 * settlement notice (`subagent/end`, after the start: a notice that outruns its start is held for
 * it), and the children's reports, each admitted to the inbox as the message its parent's model
 * reads. Ownership of an epoch is released by its notice.
 */
export class ContinuableEpochs {
  readonly #ctx: SessionContext;
  /** This session's drains: a notice that arrives while one runs wakes nothing. */
  readonly #drains: Drains;

  constructor(ctx: SessionContext, drains: Drains) {
    this.#ctx = ctx;
    this.#drains = drains;
  }

  /** A child's report: a relay message of the next step (or the next turn, for a wake-up). */
  applyReport(envelope: ReportEnvelope): void {
    if (!this.#ctx.stores.children.has(envelope.from)) return;
    const lane: InboxLane = envelope.delivery === "wakeup" ? "next-turn" : "next-step";
    const source: MessageSource = {
      kind: "subagent-report",
      form: "relay",
      senderSessionId: envelope.from,
      ...compact({ trace: envelope.trace }),
      ...(envelope.belowMcpFace ? { mcpFace: true as const } : {}),
    };
    this.#admit(envelope.messageId, lane, envelope.delivery !== "quiet", source, envelope.text);
  }

  /** A notice that outruns its epoch's `subagent/start` waits for it, so start precedes end. */
  applySettled(envelope: SettledEnvelope): void {
    const state = this.#ctx.stores.epochs.state(envelope.runId);
    if (state === undefined || state === "starting") this.#ctx.stores.epochs.holdEarly(envelope);
    else if (state === "published") this.#applyNotice(envelope);
  }

  /** Records `subagent/start` for an epoch (once) and applies a notice that arrived before it. */
  publish(runId: string, childId: string, provider: string): void {
    const { published, early } = this.#ctx.stores.epochs.publish(runId);
    if (!published) return;
    this.#ctx.stores.log.append("subagent/start", { runId, provider, id: childId, local: true });
    if (early) this.#applyNotice(early);
    else this.#ctx.childStarted();
  }

  /** An epoch's settlement notice: `subagent/end`, its epoch released, and the notice admitted. */
  #applyNotice(notice: SettledEnvelope): void {
    const { stores } = this.#ctx;
    if (!stores.epochs.end(notice.runId)) return;
    stores.log.append("subagent/end", {
      runId: notice.runId,
      provider: stores.children.get(notice.from)?.provider ?? "spawn",
      id: notice.from,
      local: true,
      stopReason: notice.stopReason,
      ...(isEmptyContent(notice.output) ? {} : { lastAssistantMessage: notice.output }),
      ...compact({ usage: notice.usage }),
    });
    stores.children.releaseEpoch(notice.from, notice.runId);
    if (notice.subtreeUsage) stores.usage.addBelow(notice.subtreeUsage);
    // A drained child's notice that reaches a drained (settled) continuable session is recorded
    // but not queued: it does not survive that session's own drain.
    const header = this.#ctx.header();
    const settledSelf = header?.mode === "continuable" && stores.activation.get() === undefined;
    if (notice.drained && settledSelf) return;
    // Idle parent: one ordinary turn; busy parent: batched into its next step; draining: no wake.
    const quiet = notice.drained || this.#drains.draining();
    const busy = stores.loop.get().openTurn !== null;
    const source: MessageSource = {
      kind: "subagent-settled",
      form: "notice",
      summary: notice.summary,
      senderSessionId: notice.from,
      ...(notice.belowMcpFace ? { mcpFace: true as const } : {}),
    };
    this.#admit(`msg_${notice.id}`, quiet || busy ? "next-step" : "next-turn", !quiet, source, notice.text);
  }

  #admit(messageId: string, lane: InboxLane, waking: boolean, source: MessageSource, text: string): void {
    const { stores } = this.#ctx;
    stores.inbox.admit({
      messageId,
      lane,
      waking,
      source,
      content: [{ type: "text", text }],
      contentHash: messageId,
    });
    if (waking) stores.loop.set({ ...stores.loop.get(), parked: false });
  }
}
