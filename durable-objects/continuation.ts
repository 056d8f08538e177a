import type { SessionHost } from "../src/agent/host";
import { modelRouteProblem, type ModelSettings } from "../src/agent/model-router";
import type { ToolRegistry } from "../src/agent/tools";
import type { TurnDriver } from "../src/agent/turn-driver";
import { toBlocks, isEmptyContent } from "../src/contract/content";
import type {
  ContinuableInit,
  ContinuableStart,
  FollowupInput,
  InterruptAuthority,
} from "../src/contract/continuable";
import type { ReportDelivery, ReportEnvelope, SettledEnvelope } from "../src/contract/envelope";
import { fail, type Outcome, ok } from "../src/contract/errors";
import type { InboxLane, MessageSource } from "../src/contract/events";
import { isSessionId, newMessageId, newRunId, newSessionId } from "../src/contract/ids";
import type { SessionHeader } from "../src/contract/session";
import type { SessionRpc } from "../src/contract/session-api";
import { checkMaxDepthForm, childDepth, deploymentDepthCap } from "../src/core/depth";
import { DESCRIPTOR_VERSION, foldDescriptor } from "../src/core/descriptor";
import { epochOutcome, noticeText, noticeSummary, reportText, residencyOf } from "../src/core/settlement";
import { describeProvider, type ProviderRecord } from "../src/providers/catalog";
import type { Delegation } from "./delegation";
import { DYNAMIC_TOOLS } from "./dynamic-tools";
import { Epochs } from "./epochs";
import type { SessionStores } from "./session-stores";

/**
 * Continuable children (contract 4): a child that lives across many turns, takes follow-ups in its
 * FIFO inbox, reports one edge up, and tells its parent exactly once per epoch that it settled.
 * The activation row is the epoch; running / waiting / settled are derived from durable state.
 */

export interface ContinuationDeps {
  stores: SessionStores;
  header(): SessionHeader | undefined;
  driver(): TurnDriver<SessionHost>;
  delegation: Delegation;
  tools: ToolRegistry<SessionHost>;
  session(id: string): SessionRpc;
  provider(name: string): Promise<ProviderRecord | undefined>;
  modelSettings(): ModelSettings;
  depthCap: string | undefined;
  kick(): void;
}

interface ActivationRow {
  epoch: number;
  runId: string;
  provider: string;
  startedSeq: number;
}

export class Continuation {
  readonly epochs: Epochs;
  readonly #deps: ContinuationDeps;

  constructor(deps: ContinuationDeps) {
    this.#deps = deps;
    this.epochs = new Epochs(deps.stores.sql);
  }

  // ---- flags ----

  draining(): boolean {
    return this.#deps.stores.sql.exec("SELECT 1 FROM flags WHERE name = 'draining'").toArray().length > 0;
  }

  #setDraining(on: boolean): void {
    const { sql } = this.#deps.stores;
    if (on) sql.exec("INSERT INTO flags (name, value) VALUES ('draining', '1') ON CONFLICT DO NOTHING");
    else sql.exec("DELETE FROM flags WHERE name = 'draining'");
  }

  activation(): ActivationRow | undefined {
    const row = this.#deps.stores.sql
      .exec<{ epoch: number; run_id: string; provider: string; started_seq: number }>(
        "SELECT epoch, run_id, provider, started_seq FROM activation WHERE id = 1",
      )
      .toArray()[0];
    return row
      ? { epoch: row.epoch, runId: row.run_id, provider: row.provider, startedSeq: row.started_seq }
      : undefined;
  }

  #activate(epoch: number, runId: string, provider: string): void {
    this.#deps.stores.sql.exec(
      "INSERT INTO activation (id, epoch, run_id, provider, started_seq) VALUES (1, ?, ?, ?, ?)",
      epoch,
      runId,
      provider,
      this.#deps.stores.log.nextSeq(),
    );
  }

  // ---- parent side ----

  /** Resolves `{childId, messageId}` at inbox acceptance in the child, before its turn starts. */
  async start(spec: ContinuableStart): Promise<Outcome<{ childId: string; messageId: string }>> {
    const deps = this.#deps;
    const header = deps.header()!;
    if (this.draining()) return fail("DRAINING", "this session is draining its children");
    const record = await deps.provider(spec.provider);
    if (!record) return fail("NO_PROVIDER", `no provider named ${spec.provider}`);
    const info = describeProvider(record);
    if (!info.continuable) {
      return fail(
        "UNSUPPORTED_CAPABILITY",
        `provider ${spec.provider} does not support continuable children`,
      );
    }
    const depthForm = checkMaxDepthForm(spec.maxDepth);
    if (depthForm) return depthForm;
    const depth = childDepth(
      header.delegationDepth,
      spec.maxDepth as number | undefined,
      deploymentDepthCap(deps.depthCap),
    );
    if (!depth.ok) return depth;
    if (spec.toolFilter) {
      const unknown = deps.tools.unknownNames(spec.toolFilter).filter((n) => !DYNAMIC_TOOLS.test(n));
      if (unknown.length > 0)
        return fail("INVALID_REQUEST", `toolFilter names unknown tools: ${unknown.join(", ")}`);
    }
    const model = spec.model ?? header.options.model;
    const problem = modelRouteProblem(model, deps.modelSettings());
    if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
    const childId = spec.childId ?? newSessionId();
    if (!isSessionId(childId)) return fail("INVALID_REQUEST", "childId must be a UUID");
    if (deps.delegation.children.has(childId))
      return fail("DUPLICATE_CHILD", `child ${childId} already exists`);
    const budget = deps.delegation.childBudget();
    if (budget) return budget;

    const runId = newRunId();
    const descriptor: Record<string, unknown> = {
      version: DESCRIPTOR_VERSION,
      mode: "continuable",
      provider: record.name,
      label: spec.label,
      agentModel: model,
      ...(spec.persona === undefined ? {} : { persona: spec.persona }),
      ...(spec.toolFilter === undefined ? {} : { toolFilter: spec.toolFilter }),
    };
    const seed = info.kind === "fork" ? deps.delegation.forkSeed() : undefined;
    const init: ContinuableInit = {
      v: 1,
      id: childId,
      parentSession: header.id,
      runId,
      provider: record.name,
      lineage: [...header.lineage, header.id],
      ...(header.tenant === undefined ? {} : { tenant: header.tenant }),
      tokenHash: header.tokenHash,
      delegationDepth: depth.value,
      mode: "continuable",
      label: spec.label,
      descriptor,
      options: {
        model,
        ...(spec.persona === undefined ? {} : { persona: spec.persona }),
        ...(spec.toolFilter === undefined ? {} : { toolFilter: spec.toolFilter }),
        ...inheritedOptions(header),
      },
      prompt: toBlocks(spec.prompt),
      ...(seed === undefined || seed.length === 0 ? {} : { seed }),
    };
    deps.stores.transact(() => {
      deps.delegation.children.own(childId, record.name, "continuable", spec.label, Date.now());
      deps.delegation.children.ownEpoch(childId, runId);
      this.epochs.reserve(runId, childId);
    });
    let created: Outcome<{ id: string; messageId: string }>;
    try {
      created = await deps.session(childId).initContinuable(init);
    } catch {
      created = fail("OVERLOADED", "the child could not be created right now");
    }
    if (!created.ok) {
      deps.stores.transact(() => {
        deps.delegation.children.forget(childId);
        this.epochs.forget(runId);
      });
      return created;
    }
    deps.stores.transact(() => this.#publishEpoch(runId, childId, record.name));
    return ok({ childId, messageId: created.value.messageId });
  }

  /** Records `subagent/start` for an epoch (once) and applies a notice that arrived before it. */
  #publishEpoch(runId: string, childId: string, provider: string): void {
    const { published, early } = this.epochs.publish(runId);
    if (!published) return;
    this.#deps.stores.log.append("subagent/start", { runId, provider, id: childId, local: true });
    if (early) this.#applyNotice(early);
  }

  /** The only way to continue a child: direct parent only; cold-resumes a settled child. */
  async followup(
    childId: string,
    content: FollowupInput["content"],
    source: MessageSource,
  ): Promise<Outcome<{ messageId: string }>> {
    const deps = this.#deps;
    const header = deps.header()!;
    if (this.draining()) return fail("DRAINING", "this session is draining its children");
    const row = deps.delegation.children.get(childId);
    if (row?.mode === "one-shot")
      return fail(
        "NOT_RESUMABLE",
        `subagent ${childId} has no supported continuation state (a one-shot child)`,
      );
    const resumeRunId = newRunId();
    if (row) deps.stores.transact(() => deps.delegation.children.ownEpoch(childId, null));
    let answer: Outcome<{ messageId: string; resumed: boolean }>;
    try {
      answer = await deps.session(childId).followup({ from: header.id, content, source, resumeRunId });
    } catch {
      answer = fail("NOT_RESUMABLE", `subagent ${childId} is unavailable right now`);
    }
    deps.stores.transact(() => {
      if (!answer.ok || !answer.value.resumed) {
        if (
          row &&
          row.state === "released" &&
          deps.delegation.children.get(childId)?.epochRunId === row.epochRunId
        ) {
          deps.delegation.children.setState(childId, "released");
        }
        return;
      }
      deps.delegation.children.ownEpoch(childId, resumeRunId);
      this.epochs.reserve(resumeRunId, childId);
      this.#publishEpoch(resumeRunId, childId, row?.provider ?? "spawn");
    });
    return answer.ok ? ok({ messageId: answer.value.messageId }) : answer;
  }

  /** Interrupt a session this one started (directly: user authority; deeper: ancestor authority). */
  async interruptChild(
    targetId: string,
    authority: InterruptAuthority,
  ): Promise<Outcome<{ accepted: true }>> {
    try {
      return await this.#deps.session(targetId).interruptBy(authority);
    } catch {
      return ok({ accepted: true }); // an unreachable target has nothing to interrupt
    }
  }

  /** Drains all descendants (no ids) or selected direct children; child-first. */
  async drain(childIds?: string[]): Promise<Outcome<{ drained: string[] }>> {
    const deps = this.#deps;
    const self = deps.header()!.id;
    const all = childIds === undefined;
    const targets = all ? deps.delegation.children.ownedContinuable() : [...new Set(childIds)];
    for (const id of targets) {
      const row = deps.delegation.children.get(id);
      if (!row) return fail("UNAUTHORIZED", `${id} is not a child of this session`);
    }
    if (all) deps.stores.transact(() => this.#setDraining(true));
    const drained: string[] = [];
    try {
      for (const id of targets) {
        const row = deps.delegation.children.get(id)!;
        if (row.mode !== "continuable") continue;
        const answer = await deps.session(id).drainFrom(self);
        if (answer.ok) {
          drained.push(id, ...answer.value.drained);
          deps.stores.transact(() => deps.delegation.children.setState(id, "released"));
        }
      }
    } finally {
      if (all) deps.stores.transact(() => this.#setDraining(false));
    }
    deps.kick();
    return ok({ drained });
  }

  // ---- child side ----

  async init(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>> {
    const { stores } = this.#deps;
    const existing = stores.header.get();
    if (existing) {
      const first = stores.log.ofTypes(["agent/inbox/inserted"], 0)[0];
      return existing.parentSession === spec.parentSession &&
        existing.mode === "continuable" &&
        first &&
        existing.oneShot === undefined &&
        this.#firstRunId() === spec.runId
        ? ok({ id: existing.id, messageId: first.data.messageId })
        : fail("DUPLICATE_CHILD", `session ${spec.id} already exists`);
    }
    const messageId = newMessageId();
    const seedLength = spec.seed?.length ?? 0;
    stores.transact(() => {
      stores.header.set({
        id: spec.id,
        parentSession: spec.parentSession,
        origin: "subagent",
        delegationDepth: spec.delegationDepth,
        createdAt: Date.now(),
        mode: "continuable",
        tokenHash: spec.tokenHash,
        lineage: spec.lineage,
        ...(spec.tenant === undefined ? {} : { tenant: spec.tenant }),
        options: spec.options,
        ...(spec.label === undefined ? {} : { label: spec.label }),
        ...(seedLength > 0 ? { seedLength } : {}),
      });
      if (spec.seed && seedLength > 0) {
        stores.log.appendSeed(spec.seed);
        stores.log.append("session/end-seed", { seedLength });
        stores.loop.set({
          ...stores.loop.get(),
          turns: spec.seed.filter((e) => e.type === "turn/start").length,
        });
      }
      stores.log.append("subagent/descriptor", spec.descriptor);
      stores.sql.exec("INSERT INTO flags (name, value) VALUES ('first_run_id', ?)", spec.runId);
      this.#activate(1, spec.runId, spec.provider);
      stores.inbox.admit({
        messageId,
        lane: "next-turn",
        waking: true,
        source: { kind: "user" },
        content: spec.prompt,
        contentHash: messageId,
      });
    });
    this.#deps.kick();
    return ok({ id: spec.id, messageId });
  }

  #firstRunId(): string | undefined {
    return this.#deps.stores.sql
      .exec<{ value: string }>("SELECT value FROM flags WHERE name = 'first_run_id'")
      .toArray()[0]?.value;
  }

  receiveFollowup(input: FollowupInput): Outcome<{ messageId: string; resumed: boolean }> {
    const { stores } = this.#deps;
    const header = stores.header.get();
    if (!header)
      return fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");
    if (header.parentSession !== input.from)
      return fail("UNAUTHORIZED", `subagent ${header.id} belongs to another parent session`);
    if (header.mode !== "continuable") {
      return fail(
        "NOT_RESUMABLE",
        `subagent ${header.id} has no supported continuation state; do not retry send_message with it`,
      );
    }
    if (this.draining()) return fail("DRAINING", `subagent ${header.id} is draining`);
    let descriptor: ReturnType<typeof foldDescriptor>;
    try {
      const own = stores.log.ofTypes(["subagent/descriptor"], header.seedLength ?? 0).map((e) => e.data);
      descriptor = foldDescriptor(own);
    } catch {
      descriptor = undefined;
    }
    if (descriptor?.mode !== "continuable") {
      return fail(
        "NOT_RESUMABLE",
        `subagent ${header.id} has no supported continuation state; do not retry send_message with it`,
      );
    }
    const messageId = newMessageId();
    let resumed = false;
    stores.transact(() => {
      const current = this.activation();
      if (!current) {
        const epoch =
          (stores.sql.exec<{ n: number | null }>("SELECT max(epoch) AS n FROM activation").one().n ??
            this.#epochCount()) + 1;
        this.#activate(epoch, input.resumeRunId, descriptor.provider);
        resumed = true;
      }
      stores.inbox.admit({
        messageId,
        lane: "next-turn",
        waking: true,
        source: input.source,
        content: toBlocks(input.content),
        contentHash: messageId,
      });
      stores.loop.set({ ...stores.loop.get(), parked: false });
    });
    this.#deps.kick();
    return ok({ messageId, resumed });
  }

  #epochCount(): number {
    return Number(
      this.#deps.stores.sql
        .exec<{ value: string }>("SELECT value FROM flags WHERE name = 'epochs'")
        .toArray()[0]?.value ?? "1",
    );
  }

  interruptBy(authority: InterruptAuthority): Outcome<{ accepted: true }> {
    const header = this.#deps.header();
    if (!header) return ok({ accepted: true });
    if (authority.kind === "user" && header.parentSession !== authority.parentSessionId) {
      return fail("UNAUTHORIZED", `${header.id} is not a child of ${authority.parentSessionId}`);
    }
    if (authority.kind === "ancestor") {
      if (authority.ancestorId === header.id) return fail("UNAUTHORIZED", "an agent cannot interrupt itself");
      if (!header.lineage.includes(authority.ancestorId))
        return fail("UNAUTHORIZED", `${header.id} is not a live descendant of the caller`);
    }
    if (header.mode !== "continuable" || !this.activation()) return ok({ accepted: true });
    this.#deps.driver().interrupt(authority.kind === "user" ? "user" : "parent");
    return ok({ accepted: true });
  }

  /** Drained by the parent: children first, then this epoch ends without waking the parent. */
  async drainFrom(parentId: string): Promise<Outcome<{ drained: string[] }>> {
    const deps = this.#deps;
    const header = deps.header();
    if (!header) return ok({ drained: [] });
    if (header.parentSession !== parentId)
      return fail("UNAUTHORIZED", `${header.id} is not a child of ${parentId}`);
    deps.stores.transact(() => this.#setDraining(true));
    const below = await this.drain();
    let aborted = false;
    deps.stores.transact(() => {
      for (const run of deps.delegation.runs.unsettled()) deps.delegation.requestCancel(run);
      deps.stores.inbox.discardPending("drained by parent");
      aborted = deps.driver().closeForInterrupt("parent");
      deps.stores.inbox.discardPending("drained by parent");
      this.#settle(true);
      this.#setDraining(false);
    });
    if (aborted) deps.driver().abortInFlight("parent");
    deps.kick();
    return ok({ drained: below.ok ? below.value.drained : [] });
  }

  /** In the drive loop when no step is owed: a settled epoch ends here (notice in the outbox). */
  settleIfDone(): boolean {
    const header = this.#deps.header();
    if (header?.mode !== "continuable" || !this.activation()) return false;
    return this.#deps.stores.transact(() => this.#settle(false));
  }

  residency(): ReturnType<typeof residencyOf> {
    const deps = this.#deps;
    return residencyOf({
      openTurn: deps.stores.loop.get().openTurn !== null,
      pendingWaking: deps.stores.inbox.pending().some((p) => p.waking),
      ownedChildren:
        deps.delegation.children.ownedContinuable().length + deps.delegation.runs.unsettledCount(),
    });
  }

  #settle(drained: boolean): boolean {
    const deps = this.#deps;
    const activation = this.activation();
    const header = deps.header()!;
    if (!activation || (!drained && this.residency() !== "settled")) return false;
    const from = activation.startedSeq;
    const { log } = deps.stores;
    const outcome = epochOutcome({
      turnEnds: log.ofTypes(["turn/end"], from).map((e) => e.data.reason),
      assistant: log.ofTypes(["assistant/message"], from).map((e) => e.data.content),
      droppedWork: log.ofTypes(["agent/inbox/discarded"], from).length > 0,
    });
    const notice: SettledEnvelope = {
      v: 1,
      id: `settled:${activation.runId}`,
      from: header.id,
      to: header.parentSession!,
      kind: "settled",
      runId: activation.runId,
      stopReason: outcome.stopReason,
      output: outcome.output,
      text: noticeText(header.id, outcome.stopReason, outcome.output),
      summary: noticeSummary(header.id, outcome.stopReason),
      drained,
    };
    deps.delegation.outbox.enqueue(notice);
    deps.stores.sql.exec("DELETE FROM activation WHERE id = 1");
    deps.stores.sql.exec(
      "INSERT INTO flags (name, value) VALUES ('epochs', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      String(activation.epoch),
    );
    return true;
  }

  /** The child's `report` tool: exactly one edge up, to the durable parent. */
  async report(text: string, delivery: ReportDelivery): Promise<Outcome<{ messageId: string }>> {
    const deps = this.#deps;
    const header = deps.header();
    if (!header || header.mode !== "continuable" || !this.activation()) {
      return fail("UNAUTHORIZED", "only a continuable child can report to its parent");
    }
    if (this.draining()) return fail("DRAINING", "this subagent is draining");
    const messageId = newMessageId();
    const envelope: ReportEnvelope = {
      v: 1,
      id: `report:${messageId}`,
      from: header.id,
      to: header.parentSession!,
      kind: "report",
      messageId,
      text: reportText(header.id, text),
      delivery,
    };
    try {
      const answer = await deps.session(header.parentSession!).deliver(envelope);
      if (!answer.ok)
        return fail("PARENT_UNAVAILABLE", `the parent could not take the report: ${answer.message}`);
    } catch {
      return fail("PARENT_UNAVAILABLE", "the parent could not be reached");
    }
    return ok({ messageId });
  }

  // ---- parent side: applying what children send (inside the delivery transaction) ----

  applyReport(envelope: ReportEnvelope): void {
    if (!this.#deps.delegation.children.has(envelope.from)) return;
    const lane: InboxLane = envelope.delivery === "wakeup" ? "next-turn" : "next-step";
    this.#admit(
      envelope.messageId,
      lane,
      envelope.delivery !== "quiet",
      { kind: "subagent-report", form: "relay", senderSessionId: envelope.from },
      envelope.text,
    );
  }

  applySettled(envelope: SettledEnvelope): void {
    const state = this.epochs.state(envelope.runId);
    if (state === undefined || state === "starting") this.epochs.holdEarly(envelope);
    else if (state === "published") this.#applyNotice(envelope);
  }

  #applyNotice(notice: SettledEnvelope): void {
    const deps = this.#deps;
    if (!this.epochs.end(notice.runId)) return;
    const child = deps.delegation.children.get(notice.from);
    deps.stores.log.append("subagent/end", {
      runId: notice.runId,
      provider: child?.provider ?? "spawn",
      id: notice.from,
      local: true,
      stopReason: notice.stopReason,
      ...(isEmptyContent(notice.output) ? {} : { lastAssistantMessage: notice.output }),
    });
    // Idle parent: one ordinary turn; busy parent: batched into its next step; draining: no wake.
    const quiet = notice.drained || this.draining();
    const busy = deps.stores.loop.get().openTurn !== null;
    const source: MessageSource = {
      kind: "subagent-settled",
      form: "notice",
      summary: notice.summary,
      senderSessionId: notice.from,
    };
    this.#admit(`msg_${notice.id}`, quiet || busy ? "next-step" : "next-turn", !quiet, source, notice.text);
    deps.delegation.children.releaseEpoch(notice.from, notice.runId);
  }

  #admit(messageId: string, lane: InboxLane, waking: boolean, source: MessageSource, text: string): void {
    const { stores } = this.#deps;
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

  /** Finishes continuable starts an earlier instance reserved but never published. */
  starting(): { runId: string; childId: string }[] {
    return this.epochs.starting();
  }
}

/** Delegation settings a child inherits from its parent. */
export function inheritedOptions(header: SessionHeader): Partial<SessionHeader["options"]> {
  const { providers, backgroundMode, reportDelivery } = header.options;
  return {
    ...(providers === undefined ? {} : { providers }),
    ...(backgroundMode === undefined ? {} : { backgroundMode }),
    ...(reportDelivery === undefined ? {} : { reportDelivery }),
  };
}
