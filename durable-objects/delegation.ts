import type { TurnDriver } from "../src/agent/turn-driver";
import type { ToolRegistry } from "../src/agent/tools";
import { modelRouteProblem, type ModelSettings } from "../src/agent/model-router";
import type { SessionHost } from "../src/agent/host";
import type { ChildInit } from "../src/contract/child-init";
import { toBlocks, isEmptyContent } from "../src/contract/content";
import {
  ENVELOPE_VERSIONS,
  type Envelope,
  type ReportEnvelope,
  type SettledEnvelope,
} from "../src/contract/envelope";
import { type Failure, fail, type Outcome, ok } from "../src/contract/errors";
import { isSessionId, newRunId, newSessionId } from "../src/contract/ids";
import type { RunView, StartRequest, SubagentResult } from "../src/contract/run";
import type { SessionHeader } from "../src/contract/session";
import type { SessionRpc } from "../src/contract/session-api";
import { childDepth, deploymentDepthCap } from "../src/core/depth";
import { faultPoint } from "../src/core/faults";
import { renderForeground } from "../src/core/run-rendering";
import { abortedBeforeStart, oneShotResult } from "../src/core/run-result";
import type { ProviderRecord } from "../src/providers/catalog";
import { checkStart } from "../src/providers/start-checks";
import { inheritedOptions } from "./continuation";
import { DYNAMIC_TOOLS } from "./dynamic-tools";
import { Outbox } from "./outbox";
import { Children, type RunRow, Runs } from "./runs";
import type { SessionStores } from "./session-stores";

/**
 * One-shot delegation on Durable Objects, both sides of it.
 * Parent: reserve rows -> `init` the child (idempotent) -> publish (`subagent/start`) -> apply the
 * child's result once (`subagent/end`, tool result, waiters). Child: `init` writes header, seed,
 * descriptor and prompt in one transaction; its turn end writes the result to its outbox in the
 * same transaction. Every cross-object message goes through the outbox and is de-duplicated.
 */

export interface DelegationDeps {
  stores: SessionStores;
  header(): SessionHeader | undefined;
  driver(): TurnDriver<SessionHost>;
  tools: ToolRegistry<SessionHost>;
  session(id: string): SessionRpc;
  provider(name: string): Promise<ProviderRecord | undefined>;
  modelSettings(): ModelSettings;
  depthCap: string | undefined;
  childCap: string | undefined;
  kick(): void;
  /** Applies what continuable children send (reports, settlement notices), inside the delivery transaction. */
  receive(envelope: ReportEnvelope | SettledEnvelope): void;
}

export class Delegation {
  readonly runs: Runs;
  readonly children: Children;
  readonly outbox: Outbox;
  readonly #deps: DelegationDeps;
  /** Starts being published by this instance right now (repair must not race them). */
  readonly #publishing = new Set<string>();
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(deps: DelegationDeps) {
    this.#deps = deps;
    this.runs = new Runs(deps.stores.sql);
    this.children = new Children(deps.stores.sql);
    this.outbox = new Outbox(deps.stores.sql, deps.stores.log);
  }

  // ---- parent side ----

  async start(
    request: StartRequest,
    origin?: { callKey: string; toolName: string; background: boolean },
  ): Promise<Outcome<RunView>> {
    const deps = this.#deps;
    const header = deps.header()!;
    if (origin) {
      const existing = this.runs.byCallKey(origin.callKey);
      if (existing) return ok(this.view(existing));
    }
    const checked = checkStart(request.provider, await deps.provider(request.provider), request);
    if (!checked.ok) return checked;
    const { provider, info, descriptor } = checked.value;
    if (provider.kind === "remote") {
      return fail(
        "UNSUPPORTED_CAPABILITY",
        `provider ${provider.name} is remote and this deployment has no remote transport yet`,
      );
    }
    const depth = childDepth(
      header.delegationDepth,
      checked.value.maxDepth,
      deploymentDepthCap(deps.depthCap),
    );
    if (!depth.ok) return depth;
    if (request.toolFilter) {
      const unknown = deps.tools.unknownNames(request.toolFilter).filter((n) => !DYNAMIC_TOOLS.test(n));
      if (unknown.length > 0)
        return fail("INVALID_REQUEST", `toolFilter names unknown tools: ${unknown.join(", ")}`);
    }
    const model = request.model ?? header.options.model;
    const problem = modelRouteProblem(model, deps.modelSettings());
    if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
    const childId = request.childId ?? newSessionId();
    if (!isSessionId(childId)) return fail("INVALID_REQUEST", "childId must be a UUID");
    if (origin) {
      const raced = this.runs.byCallKey(origin.callKey);
      if (raced) return ok(this.view(raced));
    }
    if (this.children.has(childId)) return fail("DUPLICATE_CHILD", `child ${childId} already exists`);
    const budget = this.childBudget();
    if (budget) return budget;

    const runId = newRunId();
    const seed = info.kind === "fork" ? this.forkSeed() : undefined;
    const spec: ChildInit = {
      v: 1,
      id: childId,
      parentSession: header.id,
      runId,
      provider: provider.name,
      lineage: [...header.lineage, header.id],
      ...(header.tenant === undefined ? {} : { tenant: header.tenant }),
      tokenHash: header.tokenHash,
      delegationDepth: depth.value,
      mode: "one-shot",
      descriptor: descriptor as unknown as Record<string, unknown>,
      options: {
        model,
        ...(request.persona === undefined ? {} : { persona: request.persona }),
        ...(request.toolFilter === undefined ? {} : { toolFilter: request.toolFilter }),
        ...inheritedOptions(header),
      },
      prompt: toBlocks(request.prompt),
      ...(request.label === undefined ? {} : { label: request.label }),
      ...(seed === undefined || seed.length === 0 ? {} : { seed }),
      ...(checked.value.outputSchema === undefined ? {} : { outputSchema: checked.value.outputSchema }),
    };
    const createdAt = Date.now();
    deps.stores.transact(() => {
      this.children.own(childId, provider.name, "one-shot", request.label, createdAt);
      this.runs.insert({
        runId,
        childId,
        provider: provider.name,
        local: true,
        callKey: origin?.callKey ?? null,
        taskId: origin?.background ? this.runs.nextTaskId() : null,
        toolName: origin?.toolName ?? null,
        spec,
        createdAt,
      });
    });
    return this.#publish(runId);
  }

  /** The children-per-session budget (`MAX_CHILDREN_PER_SESSION`): a start past it is refused. */
  childBudget(): Failure | undefined {
    const cap = positiveInt(this.#deps.childCap, 1000);
    return this.children.count() >= cap
      ? fail("BUDGET_EXCEEDED", `this session already started ${cap} children (MAX_CHILDREN_PER_SESSION)`)
      : undefined;
  }

  /** Creates the child (idempotently) and records `subagent/start`; settles at once if the result is in. */
  async #publish(runId: string): Promise<Outcome<RunView>> {
    const deps = this.#deps;
    const run = this.runs.get(runId)!;
    this.#publishing.add(runId);
    try {
      if (this.runs.get(runId)?.cancelRequested) {
        // disposed before the child was created: it never will be
        deps.stores.transact(() => {
          if (!this.runs.markRunning(runId)) return;
          deps.stores.log.append("subagent/start", {
            runId,
            provider: run.provider,
            id: run.childId,
            local: run.local,
          });
          this.outbox.markDelivered(`cancel:${runId}`);
          this.#settle(this.runs.get(runId)!, abortedBeforeStart());
        });
        return ok(this.view(this.runs.get(runId)!));
      }
      let created: Outcome<{ id: string }> | undefined;
      for (let attempt = 0; attempt < 3 && created === undefined; attempt++) {
        try {
          created = await deps.session(run.childId).init(run.spec);
        } catch (error) {
          if (isOverloaded(error)) break; // never retry an overloaded object at once
        }
      }
      if (created === undefined || !created.ok) {
        // No child to speak of: forget the reservation; if an init did land unseen, cancel it.
        deps.stores.transact(() => {
          this.runs.delete(runId);
          this.children.forget(run.childId);
          if (created === undefined) {
            this.outbox.enqueue({
              v: 1,
              id: `cancel:${runId}`,
              from: run.spec.parentSession,
              to: run.childId,
              kind: "cancel-run",
              runId,
            });
          }
        });
        if (created === undefined) deps.kick();
        return created ?? fail("OVERLOADED", "the child could not be created right now; try again");
      }
      deps.stores.transact(() => {
        if (!this.runs.markRunning(runId)) return;
        deps.stores.log.append("subagent/start", {
          runId,
          provider: run.provider,
          id: run.childId,
          local: run.local,
        });
        const pending = this.runs.get(runId)!;
        if (pending.result) this.#settle(pending, pending.result);
        else if (pending.cancelRequested) this.outbox.retryNow(`cancel:${runId}`);
      });
      if (this.runs.get(runId)?.cancelRequested) deps.kick();
      return ok(this.view(this.runs.get(runId)!));
    } finally {
      this.#publishing.delete(runId);
    }
  }

  /** Finishes starts that an earlier instance reserved but did not publish (it was evicted). */
  async repairStarts(): Promise<boolean> {
    let repaired = false;
    for (const run of this.runs.starting()) {
      if (this.#publishing.has(run.runId)) continue;
      const done = await this.#publish(run.runId);
      repaired ||= done.ok;
    }
    return repaired;
  }

  view(run: RunRow): RunView {
    const view: RunView = {
      runId: run.runId,
      id: run.childId,
      provider: run.provider,
      local: run.local,
      state: run.state === "settled" ? "settled" : "running",
    };
    if (run.state === "settled" && run.result) view.result = run.result;
    if (run.taskId) view.taskId = run.taskId;
    return view;
  }

  /** Resolves when the run settles or after `waitMs`, whichever is first. */
  async waitFor(runId: string, waitMs: number): Promise<RunRow | undefined> {
    const run = this.runs.get(runId);
    if (!run || run.state === "settled" || waitMs <= 0) return run;
    await new Promise<void>((resolve) => {
      const set = this.#waiters.get(runId) ?? new Set();
      this.#waiters.set(runId, set);
      const done = (): void => {
        clearTimeout(timer);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      set.add(done);
    });
    return this.runs.get(runId);
  }

  /** Dispose: cancel the child (idempotent); the result arrives as `aborted` unless it was already in. */
  dispose(runId: string): Outcome<{ accepted: true }> {
    const run = this.runs.get(runId);
    if (!run) return fail("NOT_FOUND", `no run ${runId}`);
    if (run.state !== "settled") {
      this.#deps.stores.transact(() => this.requestCancel(run));
      this.#deps.kick();
    }
    return ok({ accepted: true });
  }

  requestCancel(run: RunRow): void {
    this.runs.requestCancel(run.runId);
    this.outbox.enqueue({
      v: 1,
      id: `cancel:${run.runId}`,
      from: this.#deps.header()!.id,
      to: run.childId,
      kind: "cancel-run",
      runId: run.runId,
    });
  }

  #settle(run: RunRow, result: SubagentResult): void {
    const { stores } = this.#deps;
    if (!this.runs.settle(run.runId, result)) return;
    this.children.release(run.childId);
    stores.log.append("subagent/end", {
      runId: run.runId,
      provider: run.provider,
      id: run.childId,
      local: run.local,
      stopReason: result.stopReason,
      ...(isEmptyContent(result.output) ? {} : { lastAssistantMessage: result.output }),
    });
    if (run.callKey && !run.taskId) {
      const split = run.callKey.indexOf(":");
      const rendered = renderForeground(result);
      this.#deps
        .driver()
        .answerDeferred(
          Number(run.callKey.slice(0, split)),
          run.callKey.slice(split + 1),
          run.toolName ?? "subagent",
          [{ type: "text", text: rendered.text }],
          rendered.isError,
        );
    }
    const waiters = this.#waiters.get(run.runId);
    if (waiters)
      queueMicrotask(() => {
        for (const w of [...waiters]) w();
      });
  }

  /** A parent turn that ends while its foreground children still run cancels them (the tool's signal). */
  cancelForegroundOf(turn: number): void {
    for (const run of this.runs.foregroundOfTurn(turn)) if (!run.cancelRequested) this.requestCancel(run);
  }

  forkSeed(): ChildInit["seed"] {
    const { log } = this.#deps.stores;
    const lastEnd = log.last("turn/end");
    if (!lastEnd) return [];
    return log.page(-1, lastEnd.seq + 1).map((e) => ({ type: e.type, at: e.at, data: e.data }));
  }

  // ---- child side ----

  /** Creates this session as a one-shot child. Idempotent for the same parent and run. */
  async init(spec: ChildInit): Promise<Outcome<{ id: string }>> {
    await faultPoint(spec.id, "in-init");
    const { stores } = this.#deps;
    const existing = stores.header.get();
    if (existing) {
      return existing.parentSession === spec.parentSession && existing.oneShot?.runId === spec.runId
        ? ok({ id: existing.id })
        : fail("DUPLICATE_CHILD", `session ${spec.id} already exists`);
    }
    const seedLength = spec.seed?.length ?? 0;
    stores.transact(() => {
      const header: SessionHeader = {
        id: spec.id,
        parentSession: spec.parentSession,
        origin: "subagent",
        delegationDepth: spec.delegationDepth,
        createdAt: Date.now(),
        mode: "one-shot",
        tokenHash: spec.tokenHash,
        lineage: spec.lineage,
        ...(spec.tenant === undefined ? {} : { tenant: spec.tenant }),
        options: spec.options,
        oneShot: {
          runId: spec.runId,
          provider: spec.provider,
          ...(spec.outputSchema === undefined ? {} : { outputSchema: spec.outputSchema }),
        },
        ...(spec.label === undefined ? {} : { label: spec.label }),
        ...(seedLength > 0 ? { seedLength } : {}),
      };
      stores.header.set(header);
      if (spec.seed && seedLength > 0) {
        stores.log.appendSeed(spec.seed);
        stores.log.append("session/end-seed", { seedLength });
        const seededTurns = spec.seed.filter((e) => e.type === "turn/start").length;
        stores.loop.set({ ...stores.loop.get(), turns: seededTurns });
      }
      stores.log.append("subagent/descriptor", spec.descriptor);
      if (this.#tombstoned(spec.runId, spec.parentSession)) {
        this.#reportResult(header, true); // cancelled before it existed: the prompt never runs
        return;
      }
      stores.inbox.admit({
        messageId: `msg_${spec.runId}`,
        lane: "next-turn",
        waking: true,
        source: { kind: "user" },
        content: spec.prompt,
        contentHash: spec.runId,
      });
    });
    this.#deps.kick();
    return ok({ id: spec.id });
  }

  /** Inside the transaction that ends a turn: a one-shot child writes its result to the outbox. */
  onTurnEnd(turn: number): void {
    // foreground children of a turn that ended (aborted, failed, concluded) are cancelled with it
    this.cancelForegroundOf(turn);
    const header = this.#deps.header();
    if (header?.oneShot) this.#reportResult(header, false);
  }

  #reportResult(header: SessionHeader, cancelledBeforeStart: boolean): void {
    const oneShot = header.oneShot!;
    const id = `result:${oneShot.runId}`;
    if (this.outbox.has(id)) return;
    const { log } = this.#deps.stores;
    let result: SubagentResult;
    if (cancelledBeforeStart) result = abortedBeforeStart();
    else {
      const from = header.seedLength ?? 0;
      const assistant = log.ofTypes(["assistant/message"], from).map((e) => e.data.content);
      const turnEnd = log.last("turn/end", from)?.data;
      const capture = log
        .ofTypes(["tool/result"], from)
        .filter(
          (e) => e.data.name === "structured_output" && !e.data.isError && e.data.structured !== undefined,
        )
        .pop();
      result = oneShotResult({
        assistant,
        ...(turnEnd === undefined
          ? {}
          : {
              turnEnd:
                turnEnd.error === undefined
                  ? { reason: turnEnd.reason }
                  : { reason: turnEnd.reason, error: turnEnd.error },
            }),
        schemaRequested: oneShot.outputSchema !== undefined,
        ...(capture === undefined ? {} : { capture: { value: capture.data.structured } }),
      });
    }
    this.outbox.enqueue({
      v: 1,
      id,
      from: header.id,
      to: header.parentSession!,
      kind: "run-result",
      runId: oneShot.runId,
      result,
    });
  }

  // ---- both sides: delivery ----

  /** Applies an envelope once (de-duplicated by id) in one transaction. */
  async deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>> {
    if (!ENVELOPE_VERSIONS.includes(envelope.v)) {
      return fail("INVALID_REQUEST", `envelope version ${envelope.v} is not understood`);
    }
    await faultPoint(envelope.to, "before-apply");
    const { stores } = this.#deps;
    const header = this.#deps.header();
    if (!header && envelope.kind === "cancel-run") {
      // The cancel outran the child's creation: leave a tombstone that `init` honours.
      stores.transact(() => {
        this.#linkOrder(envelope);
        this.#tombstone(envelope.runId, envelope.from);
      });
      return ok({ applied: true });
    }
    if (!header || envelope.to !== header.id) return fail("NOT_FOUND", "no such session");
    let interrupted = false;
    let early = false;
    const applied = stores.transact(() => {
      const order = this.#linkOrder(envelope);
      if (order === "early") {
        early = true;
        return false;
      }
      if (order === "old") return false;
      const fresh =
        stores.sql
          .exec(
            "INSERT INTO seen (envelope_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING envelope_id",
            envelope.id,
            Date.now(),
          )
          .toArray().length > 0;
      if (!fresh) return false;
      if (envelope.kind === "run-result") {
        const run = this.runs.get(envelope.runId);
        if (!run || run.childId !== envelope.from || run.state === "settled") return true;
        if (run.state === "starting")
          stores.sql.exec(
            "UPDATE runs SET result = ? WHERE run_id = ? AND result IS NULL",
            JSON.stringify(envelope.result),
            run.runId,
          );
        else this.#settle(run, envelope.result);
      } else if (envelope.kind === "cancel-run") {
        if (header.parentSession !== envelope.from || header.oneShot?.runId !== envelope.runId) return true;
        interrupted = this.#cancelOneShot(header);
      } else {
        this.#deps.receive(envelope);
      }
      return true;
    });
    if (early) return fail("OUT_OF_ORDER", "an earlier envelope on this link has not arrived yet");
    if (interrupted) this.#deps.driver().abortInFlight("parent");
    if (applied) this.#deps.kick();
    return ok({ applied });
  }

  /** Per-link order at the receiver: apply envelope n only after n-1; older ones are duplicates. */
  #linkOrder(envelope: Envelope): "next" | "early" | "old" {
    if (envelope.linkSeq === undefined) return "next"; // direct deliveries (reports) carry no link order
    const { sql } = this.#deps.stores;
    const row = sql
      .exec<{ next_seq: number }>("SELECT next_seq FROM links WHERE sender = ?", envelope.from)
      .toArray()[0];
    const next = row?.next_seq ?? 1;
    if (envelope.linkSeq < next) return "old";
    if (envelope.linkSeq > next) return "early";
    sql.exec(
      "INSERT INTO links (sender, next_seq) VALUES (?, ?) ON CONFLICT (sender) DO UPDATE SET next_seq = excluded.next_seq",
      envelope.from,
      next + 1,
    );
    return "next";
  }

  #tombstone(runId: string, parent: string): void {
    this.#deps.stores.sql.exec(
      "INSERT INTO flags (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
      `cancelled:${runId}`,
      parent,
    );
  }

  #tombstoned(runId: string, parent: string): boolean {
    const row = this.#deps.stores.sql
      .exec<{ value: string }>("SELECT value FROM flags WHERE name = ?", `cancelled:${runId}`)
      .toArray()[0];
    return row?.value === parent;
  }

  #cancelOneShot(header: SessionHeader): boolean {
    if (this.outbox.has(`result:${header.oneShot!.runId}`)) return false;
    const loop = this.#deps.stores.loop.get();
    if (loop.openTurn !== null) return this.#deps.driver().closeForInterrupt("parent");
    this.#deps.stores.inbox.discardPending("cancelled by parent");
    this.#reportResult(header, true);
    return false;
  }

  /** Delivers due outbox rows. Resolves true when something was delivered (more may be owed). */
  async drainOutbox(): Promise<boolean> {
    const { stores } = this.#deps;
    const scope = this.#deps.header()?.id ?? "";
    let delivered = false;
    const blocked = new Set<string>();
    for (const row of this.outbox.due(Date.now())) {
      if (blocked.has(row.target)) continue;
      try {
        await faultPoint(scope, "after-outbox-write");
        const answer = await this.#deps.session(row.target).deliver(row.envelope);
        await faultPoint(scope, "after-send");
        if (!answer.ok && answer.code !== "NOT_FOUND") throw new Error(`${answer.code}: ${answer.message}`);
        if (!answer.ok) throw new Error(`target ${row.target} does not exist`);
        stores.transact(() => this.outbox.markDelivered(row.id));
        delivered = true;
      } catch (error) {
        blocked.add(row.target);
        const message = error instanceof Error ? error.message : String(error);
        stores.transact(() => this.outbox.markFailed(row, message.slice(0, 500), isOverloaded(error)));
      }
    }
    return delivered;
  }

  nextDue(): number | undefined {
    const outbox = this.outbox.nextDue();
    return this.runs.starting().some((r) => !this.#publishing.has(r.runId)) ? Date.now() : outbox;
  }
}

function isOverloaded(error: unknown): boolean {
  return (
    typeof error === "object" && error !== null && (error as { overloaded?: unknown }).overloaded === true
  );
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
