import type { JsonValue } from "../contract/json";
import { compact } from "../core/compact";
import type { ContentBlock } from "../contract/content";
import type { ToolCall, TurnEndReason, Usage } from "../contract/events";
import { addUsage } from "../core/usage";
import { faultPoint } from "../core/faults";
import { type LoopState, type Plan, planStep } from "../core/turn-plan";
import type { ModelClient, ModelParams, ModelReply } from "./model";
import { callKey } from "./call-keys";
import type { DriverStores } from "./driver-stores";
import { callModel, DEFAULT_MODEL_CALL_POLICY, type AttemptClaim, type ModelCallPolicy } from "./model-calls";
import { EXTERNAL_MODEL, recordInbox } from "./external-session";
import { claimAttempt, claimToolRun, stepRefusal, withoutAttempts } from "./step-limits";
import { executeTool, type Tool, type ToolOutcome, toolSpecs } from "./tools";
import type { TurnControl } from "./turn-control";

/**
 * The turn driver: one step per call of `step()`: claim -> model call -> append -> tools.
 * Every step is: a synchronous transaction (plan, claim, record the fence) -> the external call
 * -> a synchronous transaction that re-checks the fence and appends. A result that arrives after
 * an interrupt or a newer step is dropped, so a zombie or duplicate step never appends twice.
 * Completed steps are never redone; a crash mid-step re-runs that step.
 */

/** Model calls one turn may make before it ends as `error` (`MAX_STEPS_PER_TURN` overrides). */
export const MAX_STEPS_PER_TURN = 64;

export interface SessionAgent<Host> {
  stores: DriverStores;
  sessionId: string;
  /** The step budget of one turn (default `MAX_STEPS_PER_TURN`). */
  maxSteps?: number;
  modelRoute(): string;
  model(): ModelClient;
  /** Timeout, retries and the per-step attempt budget of model calls (default DEFAULT_MODEL_CALL_POLICY). */
  modelPolicy?: ModelCallPolicy;
  /** The session's sampling parameters. */
  params?(): ModelParams | undefined;
  /** Inside the transaction that appends a step's `assistant/message`: the usage it reported. */
  onStepUsage?(usage: Usage): void;
  /** The session's token budget and what it used so far, when it has one (semantics.md §8). */
  budget?(): { tokens: number; used: number } | undefined;
  /** The bytes the session's log holds and its quota (MAX_LOG_BYTES), checked before each model step. */
  logQuota?(): { bytes: number; max: number };
  /** Live text of a step while its model call streams it (not durable; attempt numbers restart a step's text). */
  onTextDelta?(delta: { turn: number; step: number; attempt: number; text: string }): void;
  system(): string | undefined;
  tools(): Promise<Tool<unknown, Host>[]>;
  host: Host;
  /** Which tool calls (by call key) are long-running work already in flight. */
  inFlight(callKeys: readonly string[]): Set<string>;
  /** Called inside the transaction that appends `turn/end`. */
  onTurnEnd(turn: number, reason: TurnEndReason, turnStartSeq: number): void;
}

interface Fence {
  epoch: number;
  turn: number;
  step: number;
  /** A model step's first attempt, claimed in the transaction that opened the step. */
  attempt?: number;
}

export class TurnDriver<Host> implements TurnControl {
  readonly #agent: SessionAgent<Host>;
  /** In-flight external calls; aborted by an interrupt. Memory only: eviction drops them anyway. */
  readonly #inFlight = new Set<AbortController>();

  constructor(agent: SessionAgent<Host>) {
    this.#agent = agent;
  }

  /** Runs one step. Resolves true when it made progress (more work may be owed). */
  async step(): Promise<boolean> {
    const { stores } = this.#agent;
    if (this.#external()) return stores.transact(() => recordInbox(stores));
    const started = stores.transact(() => this.#begin());
    if (started === undefined) return false;
    if (started.plan.kind === "tools") {
      await this.#runTools(started.plan.calls, started.fence);
      return true;
    }
    await this.#modelStep(started.fence);
    return true;
  }

  /** Ends the open turn as `aborted` and parks pending work until the next waking delivery. */
  interrupt(cause: string): boolean {
    const changed = this.#agent.stores.transact(() => this.closeForInterrupt(cause));
    if (changed) this.abortInFlight(cause);
    return changed;
  }

  /**
   * The durable half of an interrupt, for callers that compose it into their own transaction;
   * they call `abortInFlight` once it committed.
   */
  closeForInterrupt(cause: string): boolean {
    const { stores } = this.#agent;
    const loop = stores.loop.get();
    const pending = stores.inbox.pending();
    if (loop.openTurn === null && !pending.some((p) => p.waking)) return false;
    const closed = loop.openTurn === null ? loop : this.#endTurn(loop, "aborted", { cause });
    stores.loop.set({ ...closed, epoch: closed.epoch + 1, parked: true });
    return true;
  }

  abortInFlight(cause: string): void {
    for (const controller of this.#inFlight) controller.abort(new Error(`interrupted (${cause})`));
    this.#inFlight.clear();
  }

  /** Appends the result of a (deferred) tool call if its turn is still open and it is unanswered. */
  answerDeferred(
    turn: number,
    toolCallId: string,
    name: string,
    content: ContentBlock[],
    isError: boolean,
    structured?: JsonValue,
  ): boolean {
    const { stores } = this.#agent;
    const loop = stores.loop.get();
    if (loop.openTurn !== turn || loop.turnStartSeq === null) return false;
    const open = stores.log.unansweredToolCalls(loop.turnStartSeq);
    if (!open.some((c) => c.id === toolCallId)) return false;
    stores.log.append("tool/result", {
      toolCallId,
      name,
      content,
      isError,
      ...compact({ structured }),
    });
    return true;
  }

  /** What the next step would do, from durable state only (no side effects). */
  plan(): Plan {
    const { stores } = this.#agent;
    const loop = stores.loop.get();
    const turn = loop.openTurn;
    const unanswered = loop.turnStartSeq === null ? [] : stores.log.unansweredToolCalls(loop.turnStartSeq);
    const inFlightKeys =
      turn === null ? new Set<string>() : this.#agent.inFlight(unanswered.map((c) => callKey(turn, c.id)));
    return planStep({
      loop,
      pending: stores.inbox.pending(),
      unanswered,
      inFlight: new Set(
        unanswered.filter((c) => turn !== null && inFlightKeys.has(callKey(turn, c.id))).map((c) => c.id),
      ),
    });
  }

  /** Whether a step is owed now (a turn that waits for long-running tool calls owes nothing). */
  owesStep(): boolean {
    if (this.#external()) return this.#agent.stores.inbox.pending().length > 0;
    const kind = this.plan().kind;
    return kind !== "idle" && kind !== "await-tools";
  }

  /** A session driven from outside (`model: "external"`, an MCP client): it runs no turns. */
  #external(): boolean {
    return this.#agent.modelRoute() === EXTERNAL_MODEL;
  }

  #begin(): { plan: Plan; fence: Fence } | undefined {
    const { stores } = this.#agent;
    let loop = stores.loop.get();
    const plan = this.plan();
    if (plan.kind === "idle" || plan.kind === "await-tools") return undefined;
    if (plan.kind === "start-turn") {
      const turn = loop.turns + 1;
      const seq = stores.log.append("turn/start", { turn });
      loop = { ...loop, turns: turn, openTurn: turn, turnStartSeq: seq, step: 0 };
      stores.loop.set(loop);
    }
    if (plan.kind !== "tools") {
      for (const messageId of plan.claim) this.#claim(messageId, loop.openTurn!);
      const refused = stepRefusal(loop, {
        maxSteps: this.#agent.maxSteps ?? MAX_STEPS_PER_TURN,
        attemptsPerStep: this.#policy().attemptsPerStep,
        tokens: this.#agent.budget?.(),
        log: this.#agent.logQuota?.(),
      });
      if (refused) {
        stores.loop.set(this.#endTurn(loop, "error", refused));
        return { plan: { kind: "idle" }, fence: { epoch: -1, turn: -1, step: -1 } };
      }
    }
    if (plan.kind === "tools") {
      // unanswered calls that are not running: a restart cut their run short; run them again
      // (a durable, bounded claim) or answer them with the refusal
      const claimed = claimToolRun(loop);
      if ("refusal" in claimed) {
        for (const call of plan.calls)
          this.answerDeferred(
            loop.openTurn!,
            call.id,
            call.name,
            [{ type: "text", text: claimed.refusal }],
            true,
          );
        return { plan: { kind: "idle" }, fence: { epoch: -1, turn: -1, step: -1 } };
      }
      stores.loop.set(claimed.next);
      return { plan, fence: { epoch: loop.epoch, turn: loop.openTurn!, step: loop.step } };
    }
    // the step's first model call is claimed here, in the transaction that opens the step (a
    // retry claims its own in a transaction of its own)
    const attempt = (loop.attempts ?? 0) + 1;
    stores.loop.set({ ...loop, attempts: attempt });
    return { plan, fence: { epoch: loop.epoch, turn: loop.openTurn!, step: loop.step, attempt } };
  }

  #claim(messageId: string, turn: number): void {
    const { stores } = this.#agent;
    const item = stores.inbox.claim(messageId);
    if (!item) return;
    stores.log.append("agent/inbox/claimed", { messageId, turn });
    stores.log.append("user/message", { messageId, content: item.content, source: item.source });
  }

  #current(fence: Fence): boolean {
    const loop = this.#agent.stores.loop.get();
    return loop.epoch === fence.epoch && loop.openTurn === fence.turn && loop.step === fence.step;
  }

  #endTurn(
    loop: LoopState,
    reason: TurnEndReason,
    extra: { cause?: string; error?: string; code?: "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" } = {},
  ): LoopState {
    const { stores } = this.#agent;
    const turn = loop.openTurn!;
    stores.log.append("turn/end", { turn, reason, ...extra, ...(loop.usage ? { usage: loop.usage } : {}) });
    this.#agent.onTurnEnd(turn, reason, loop.turnStartSeq!);
    const { usage: _usage, ...rest } = withoutAttempts(loop);
    const closed = { ...rest, openTurn: null, turnStartSeq: null, step: 0 };
    stores.loop.set(closed);
    return closed;
  }

  #policy(): ModelCallPolicy {
    return this.#agent.modelPolicy ?? DEFAULT_MODEL_CALL_POLICY;
  }

  /** Claims one model call of the fenced step from its durable budget (one transaction per attempt). */
  #claimAttempt(fence: Fence, lastError: string | undefined): AttemptClaim {
    const { stores } = this.#agent;
    return stores.transact((): AttemptClaim => {
      if (!this.#current(fence)) return { ok: false, reason: "the step was superseded" };
      const { claim, next } = claimAttempt(stores.loop.get(), this.#policy().attemptsPerStep, lastError);
      if (next) stores.loop.set(next);
      return claim;
    });
  }

  async #modelStep(fence: Fence): Promise<void> {
    const agent = this.#agent;
    const { stores } = agent;
    if (fence.epoch < 0) return; // the step budget ended the turn in #begin
    const turnStartSeq = stores.loop.get().turnStartSeq!;
    const controller = new AbortController();
    this.#inFlight.add(controller);
    let reply: ModelReply | undefined;
    let failure: string | undefined;
    try {
      const tools = await agent.tools();
      const system = agent.system();
      const turn = stores.log.conversation(turnStartSeq);
      const params = agent.params?.();
      let attempt = 0;
      const onTextDelta = agent.onTextDelta;
      reply = await callModel(
        agent.model(),
        {
          model: agent.modelRoute(),
          ...compact({ system }),
          turn,
          history: () => stores.log.conversation(0),
          tools: toolSpecs(tools),
          ...(params ? { params } : {}),
          signal: controller.signal,
          ...(onTextDelta
            ? {
                onTextDelta: (text: string) =>
                  onTextDelta({ turn: fence.turn, step: fence.step, attempt, text }),
              }
            : {}),
        },
        this.#policy(),
        {
          // The claimed attempt needs no explicit flush: a Durable Object's output gate holds the
          // model's request until every earlier write is durable, so a call that left is counted.
          beforeCall: () => faultPoint(agent.sessionId, "before-model"),
          claimAttempt: (lastError) => {
            const claim: AttemptClaim =
              attempt === 0 && fence.attempt !== undefined
                ? {
                    ok: true,
                    attempt: fence.attempt,
                    remaining: this.#policy().attemptsPerStep - fence.attempt,
                  }
                : this.#claimAttempt(fence, lastError);
            if (claim.ok) attempt = claim.attempt;
            return claim;
          },
        },
      );
      await faultPoint(agent.sessionId, "after-model");
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    } finally {
      this.#inFlight.delete(controller);
    }
    await faultPoint(agent.sessionId, "before-append");
    const toolCalls = stores.transact(() => {
      if (!this.#current(fence)) return []; // interrupted or superseded meanwhile: drop the result
      const loop = stores.loop.get();
      if (reply === undefined) {
        this.#endTurn(loop, "error", { error: (failure ?? "model call failed").slice(0, 4096) });
        return [];
      }
      stores.log.append("assistant/message", {
        content: reply.content,
        ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
        stopReason: reply.stopReason,
        ...(reply.usage ? { usage: reply.usage } : {}),
        model: agent.modelRoute(),
      });
      const usage = addUsage(loop.usage, reply.usage);
      // the step's tool calls (if any) run right after this commit: their first run is claimed here
      const next = {
        ...withoutAttempts(loop),
        step: loop.step + 1,
        ...(usage ? { usage } : {}),
        ...(reply.toolCalls.length > 0 ? { toolRuns: 1 } : {}),
      };
      stores.loop.set(next);
      if (reply.usage) agent.onStepUsage?.(reply.usage);
      // A final answer ends the turn, unless waking next-step work (a steer, a report, a notice)
      // arrived meanwhile: a busy session takes it at its nearest step, not in a new turn.
      const steered = stores.inbox.pending().some((p) => p.lane === "next-step" && p.waking);
      if (reply.toolCalls.length === 0 && !(reply.stopReason === "end" && steered)) {
        this.#endTurn(
          next,
          reply.stopReason === "end" || reply.stopReason === "tool-use" ? "completed" : reply.stopReason,
        );
      }
      return reply.toolCalls;
    });
    await faultPoint(agent.sessionId, "after-append");
    if (toolCalls.length > 0) await this.#runTools(toolCalls, { ...fence, step: fence.step + 1 });
  }

  async #runTools(calls: readonly ToolCall[], fence: Fence): Promise<void> {
    const agent = this.#agent;
    const tools = await agent.tools();
    const run = async (call: ToolCall): Promise<ToolOutcome> => {
      const controller = new AbortController();
      this.#inFlight.add(controller);
      try {
        return await executeTool(
          tools,
          call.name,
          call.args,
          {
            sessionId: agent.sessionId,
            callKey: callKey(fence.turn, call.id),
            toolCallId: call.id,
            signal: controller.signal,
          },
          agent.host,
        );
      } finally {
        this.#inFlight.delete(controller);
      }
    };
    const concurrent = (call: ToolCall): boolean =>
      tools.find((t) => t.name === call.name)?.concurrent === true;
    // consecutive calls of concurrent tools run side by side; every result is recorded in call order
    const started = new Map<number, Promise<ToolOutcome>>();
    for (const [index, call] of calls.entries()) {
      if (!started.has(index) && concurrent(call)) {
        for (let next = index; next < calls.length && concurrent(calls[next]!); next++)
          started.set(next, run(calls[next]!));
      }
      const outcome = await (started.get(index) ?? run(call));
      if ("deferred" in outcome) continue;
      const appended = agent.stores.transact(() => {
        if (!this.#current(fence)) return false;
        const done = this.answerDeferred(
          fence.turn,
          call.id,
          call.name,
          outcome.content,
          outcome.isError === true,
          outcome.structured,
        );
        if (done && outcome.concludesTurn) this.#conclude(calls.slice(index + 1), fence);
        return done && !outcome.concludesTurn;
      });
      if (!appended) return; // the turn moved on (interrupt or a concluding tool): later calls do not run
    }
  }

  /** A concluding tool (a structured-output capture) ends the turn; later calls are denied. */
  #conclude(later: readonly ToolCall[], fence: Fence): void {
    for (const call of later) {
      this.answerDeferred(
        fence.turn,
        call.id,
        call.name,
        [{ type: "text", text: "Error: denied: the turn already concluded" }],
        true,
      );
    }
    this.#endTurn(this.#agent.stores.loop.get(), "completed");
  }
}
