import { compact } from "../core/compact";
import type { MessageSource } from "../contract/events";
import { addUsage } from "../core/usage";
import { priced } from "../core/prices";
import { faultPoint } from "../core/faults";
import type { Plan } from "../core/turn-plan";
import { overThreshold } from "./compaction";
import { BudgetRefusal, stepBudgetKey } from "./budget";
import { Compactor, type CompactorPorts, ContextOverflow, isOverflow, overflowFailure } from "./compactor";
import type { ModelReply, ModelRequest } from "./model";
import { callKey } from "./call-keys";
import { callModel, type AttemptClaim } from "./model-calls";
import { recordInbox } from "./external-session";
import {
  claimAttempt,
  claimCompactionAttempt,
  claimToolRun,
  stepRefusal,
  withoutAttempts,
} from "./step-limits";
import { OwnerUnreachable, StepBudget } from "./step-budget";
import { ToolRunner, type ToolRunnerPorts } from "./tool-runner";
import { toolSpecs } from "./tools";
import type { Fence } from "./turns";

/**
 * The turn driver: one step per call of `step()`: claim -> model call -> append -> tools.
 * Every step is: a synchronous transaction (plan, claim, record the fence) -> the external call
 * -> a synchronous transaction that re-checks the fence and appends. A result that arrives after
 * an interrupt or a newer step is dropped, so a zombie or duplicate step never appends twice.
 * Completed steps are never redone; a crash mid-step re-runs that step. The turns' durable
 * state (plan, fence, ending a turn, answers) is `Turns` (turns.ts); the driver runs the steps:
 * the model half here, the tool half in tool-runner.ts, its budget hooks in step-budget.ts.
 */

/**
 * What the turn driver runs with: the session's stores, turns and settings (read at each step),
 * the model routes, and its ports.
 */
export interface TurnDriverPorts<Host> extends CompactorPorts, ToolRunnerPorts<Host> {
  /** Live text of a step while its model call streams it (not durable; attempt numbers restart a step's text). */
  live?: { delta(delta: { turn: number; step: number; attempt: number; text: string }): void };
}

/** A step that starts nothing (the step budget ended the turn, or a restart's refusal answered). */
const NOTHING: Fence = { epoch: -1, turn: -1, step: -1 };

export class TurnDriver<Host> {
  readonly name = "turn driver";
  readonly #ports: TurnDriverPorts<Host>;
  readonly #compactor: Compactor;
  readonly #budget: StepBudget;
  readonly #tools: ToolRunner<Host>;

  constructor(ports: TurnDriverPorts<Host>) {
    this.#ports = ports;
    this.#compactor = new Compactor(ports);
    this.#budget = new StepBudget(ports);
    this.#tools = new ToolRunner(ports);
  }

  /** Runs one step. Resolves true when it made progress (more work may be owed). */
  async step(): Promise<boolean> {
    const { stores, turns } = this.#ports;
    if (turns.external()) return stores.transact(() => recordInbox(stores));
    const budget = this.#budget;
    // a budget reservation held for a call that is over (a crash cut its settle short) is
    // settled before anything else runs: a reservation never outlives its call
    if (budget.owesSettle()) {
      await budget.settle();
      return true;
    }
    const started = stores.transact(() => this.#begin());
    if (started === undefined) {
      const compacted = await this.#compactIdle();
      await budget.settle();
      return compacted;
    }
    if (started.plan.kind === "tools") {
      await this.#tools.run(started.plan.calls, started.fence);
      return true;
    }
    await this.#modelStep(started.fence);
    // what the step spent is reported and its reservation released at once (before its tools
    // run), so the tree's other sessions may use what it did not
    await budget.settle();
    return true;
  }

  /**
   * Due now while a step is owed, a caller's compaction while no turn is open, or a budget
   * reservation to settle (the drive loop's alarm).
   */
  nextDue(): number | undefined {
    const { turns } = this.#ports;
    return turns.owesStep() || this.#compactor.idleOwed() || this.#budget.owesSettle()
      ? Date.now()
      : undefined;
  }

  /** A caller's compaction while no turn is open: done at once, without starting a turn. */
  async #compactIdle(): Promise<boolean> {
    if (!this.#compactor.idleOwed()) return false;
    await this.#compactor.compactIdle(toolSpecs(await this.#ports.tools.visibleTools()));
    return true;
  }

  #begin(): { plan: Plan; fence: Fence } | undefined {
    const { stores, turns } = this.#ports;
    let loop = stores.loop.get();
    const plan = turns.plan();
    if (plan.kind === "idle" || plan.kind === "await-tools") return undefined;
    if (plan.kind === "start-turn") {
      const turn = loop.turns + 1;
      const seq = stores.log.append("turn/start", { turn });
      loop = { ...loop, turns: turn, openTurn: turn, turnStartSeq: seq, step: 0 };
      stores.loop.set(loop);
    }
    if (plan.kind === "tools") {
      const fence = { epoch: loop.epoch, turn: loop.openTurn!, step: loop.step };
      // calls approved since they were made: their first run, claimed by their approvals
      const keys = plan.calls.map((c) => callKey(loop.openTurn!, c.id));
      if (stores.approvals.claimFirstRuns(keys).size === plan.calls.length) return { plan, fence };
      // unanswered calls that are not running: a restart cut their run short; run them again
      // (a durable, bounded claim) or answer them with the refusal
      const claimed = claimToolRun(loop);
      if ("refusal" in claimed) {
        for (const call of plan.calls)
          turns.answerDeferred(
            loop.openTurn!,
            call.id,
            call.name,
            [{ type: "text", text: claimed.refusal }],
            true,
          );
        return { plan: { kind: "idle" }, fence: NOTHING };
      }
      stores.loop.set(claimed.next);
      return { plan, fence };
    }
    const claimed = plan.claim.map((messageId) => this.#claim(messageId, loop.openTurn!));
    // a new turn continues the trace of the message that started it (README "Traces")
    const trace = plan.kind === "start-turn" ? claimed.find((source) => source)?.trace : undefined;
    if (trace) {
      loop = { ...loop, trace };
      stores.loop.set(loop);
    }
    const settings = this.#ports.settings();
    const refused = stepRefusal(loop, {
      maxSteps: settings.maxSteps,
      attemptsPerStep: settings.policy.attemptsPerStep,
      budget: this.#ports.budget?.state(),
      log: { bytes: stores.log.bytes(), max: settings.maxLogBytes },
    });
    if (refused) {
      turns.end(loop, "error", refused);
      return { plan: { kind: "idle" }, fence: NOTHING };
    }
    // the step's first model call is claimed here, in the transaction that opens the step (a
    // retry claims its own in a transaction of its own)
    const attempt = (loop.attempts ?? 0) + 1;
    stores.loop.set({ ...loop, attempts: attempt });
    return { plan, fence: { epoch: loop.epoch, turn: loop.openTurn!, step: loop.step, attempt } };
  }

  /** Claims one pending message into the open turn; its source, when it was still pending. */
  #claim(messageId: string, turn: number): MessageSource | undefined {
    const { stores } = this.#ports;
    const item = stores.inbox.claim(messageId);
    if (!item) return undefined;
    stores.log.append("agent/inbox/claimed", { messageId, turn });
    stores.log.append("user/message", { messageId, content: item.content, source: item.source });
    return item.source;
  }

  /** Claims one model call of the fenced step from its durable budget (one transaction per attempt). */
  #claimAttempt(fence: Fence, lastError: string | undefined, attemptsPerStep: number): AttemptClaim {
    const { stores, turns } = this.#ports;
    return stores.transact((): AttemptClaim => {
      if (!turns.current(fence)) return { ok: false, reason: "the step was superseded" };
      const { claim, next } = claimAttempt(stores.loop.get(), attemptsPerStep, lastError);
      if (next) stores.loop.set(next);
      return claim;
    });
  }

  async #modelStep(fence: Fence): Promise<void> {
    const { stores, turns, live } = this.#ports;
    if (fence.epoch < 0) return; // the step budget ended the turn in #begin
    const settings = this.#ports.settings();
    const { sessionId, policy } = settings;
    const turnStartSeq = stores.loop.get().turnStartSeq!;
    const controller = new AbortController();
    const release = turns.track(controller);
    let reply: ModelReply | undefined;
    let failure: string | undefined;
    let overflowed = false;
    let refused = false;
    // every model call of the step is claimed from its attempt budget, the first in the
    // transaction that opened the step; its compactions' calls from a budget of their own
    let preclaimed = fence.attempt !== undefined;
    let attempt = 0;
    const claimAttempt = (lastError: string | undefined): AttemptClaim => {
      const claim: AttemptClaim = preclaimed
        ? { ok: true, attempt: fence.attempt!, remaining: policy.attemptsPerStep - fence.attempt! }
        : this.#claimAttempt(fence, lastError, policy.attemptsPerStep);
      preclaimed = false;
      if (claim.ok) attempt = claim.attempt;
      return claim;
    };
    const claimCompaction = (): AttemptClaim =>
      stores.transact((): AttemptClaim => {
        if (!turns.current(fence)) return { ok: false, reason: "the step was superseded" };
        const { claim, next } = claimCompactionAttempt(stores.loop.get(), policy.attemptsPerStep);
        if (next) stores.loop.set(next);
        return claim;
      });
    try {
      const specs = toolSpecs(await this.#ports.tools.visibleTools());
      const sizing = this.#compactor.sizing(specs);
      const { client, fixedChars } = sizing;
      let { window } = sizing;
      const site = () => ({
        fence,
        window,
        fixedChars,
        signal: controller.signal,
        claimAttempt: claimCompaction,
        budgetKey: `${stepBudgetKey(fence.turn, fence.step)}/compaction`,
      });
      const request = (): ModelRequest => {
        const view = stores.log.view();
        return {
          model: settings.modelRoute,
          purpose: "step",
          ...compact({ system: settings.system, summary: view.compaction?.summary }),
          turn: view.messages(window, turnStartSeq),
          history: () => view.messages(window),
          contextWindow: window,
          tools: specs,
          ...(settings.params ? { params: settings.params } : {}),
          signal: controller.signal,
          ...(live
            ? {
                onTextDelta: (text: string) =>
                  live.delta({ turn: fence.turn, step: fence.step, attempt, text }),
              }
            : {}),
        };
      };
      const call = async () => {
        // the step's worst case is reserved from the budget before its first call (a re-run
        // after a crash reuses the reservation; one after a compaction reserves anew)
        await this.#budget.reserve(
          stepBudgetKey(fence.turn, fence.step),
          stores.log.view().estimate(window, fixedChars),
        );
        return callModel(client, request(), policy, {
          // The claimed attempt needs no explicit flush: a Durable Object's output gate holds the
          // model's request until every earlier write is durable, so a call that left is counted.
          beforeCall: () => faultPoint(sessionId, "before-model"),
          claimAttempt,
        });
      };
      const requested = stores.compaction.pending() !== undefined;
      // the reply's tokens share the window with the request (OpenAI counts max_tokens against it)
      const estimate =
        stores.log.view().estimate(window, fixedChars) + (settings.params?.maxOutputTokens ?? 0);
      if (requested || overThreshold(estimate, window)) {
        // a failed summary leaves the view as it is: the step may still fit (an overflow says if not)
        await this.#compactor.compact(requested ? "request" : "threshold", site()).catch((error: unknown) => {
          if (controller.signal.aborted) throw error;
        });
      }
      try {
        reply = await call();
      } catch (error) {
        if (!isOverflow(error) || controller.signal.aborted) throw error;
        // refused as too long: compact (within the window the model stated, if smaller), then the
        // step once more; a second refusal ends the turn
        if (error.contextLimit !== undefined && error.contextLimit < window) {
          window = error.contextLimit;
          this.#compactor.stated(settings.modelRoute, window);
        }
        if (!(await this.#compactor.compact("overflow", site())))
          throw overflowFailure(window, error, "there was nothing left to compact");
        try {
          reply = await call();
        } catch (again) {
          throw isOverflow(again) ? overflowFailure(window, again, "even after a compaction") : again;
        }
      }
      await faultPoint(sessionId, "after-model");
    } catch (error) {
      if (error instanceof OwnerUnreachable) throw error.cause;
      failure = error instanceof Error ? error.message : String(error);
      overflowed = error instanceof ContextOverflow;
      refused = error instanceof BudgetRefusal;
    } finally {
      release();
    }
    await faultPoint(sessionId, "before-append");
    const toolCalls = stores.transact(() => {
      if (!turns.current(fence)) return []; // interrupted or superseded meanwhile: drop the result
      const loop = stores.loop.get();
      if (reply === undefined) {
        turns.end(loop, "error", {
          error: (failure ?? "model call failed").slice(0, 4096),
          ...(overflowed ? { code: "CONTEXT_OVERFLOW" as const } : {}),
          ...(refused ? { code: "BUDGET_EXCEEDED" as const } : {}),
        });
        return [];
      }
      // usage is priced as it is recorded: a later change of MODEL_PRICES never rewrites history
      const used = priced(reply.usage, settings.modelRoute, settings.prices);
      stores.log.append("assistant/message", {
        content: reply.content,
        ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
        stopReason: reply.stopReason,
        ...(used ? { usage: used } : {}),
        model: settings.modelRoute,
      });
      const usage = addUsage(loop.usage, used);
      // the step's tool calls (if any) run right after this commit: their first run is claimed here
      const next = {
        ...withoutAttempts(loop),
        step: loop.step + 1,
        ...(usage ? { usage } : {}),
        ...(reply.toolCalls.length > 0 ? { toolRuns: 1 } : {}),
      };
      stores.loop.set(next);
      if (used) stores.usage.addOwn(used);
      // A final answer ends the turn, unless waking next-step work (a steer, a report, a notice)
      // arrived meanwhile: a busy session takes it at its nearest step, not in a new turn.
      const steered = stores.inbox.pending().some((p) => p.lane === "next-step" && p.waking);
      if (reply.toolCalls.length === 0 && !(reply.stopReason === "end" && steered)) {
        turns.end(
          next,
          reply.stopReason === "end" || reply.stopReason === "tool-use" ? "completed" : reply.stopReason,
        );
      }
      return reply.toolCalls;
    });
    await faultPoint(sessionId, "after-append");
    if (toolCalls.length > 0) await this.#tools.run(toolCalls, { ...fence, step: fence.step + 1 });
  }
}
