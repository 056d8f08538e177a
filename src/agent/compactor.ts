import type { CompactionTrigger } from "../contract/events";
import { textOf } from "../contract/content";
import { faultPoint } from "../core/faults";
import { compactionRequest, contextWindowOf, overThreshold } from "./compaction";
import type { CompactionPlan } from "./context-view";
import type { DriverStores } from "./driver-stores";
import { type ModelClient, ModelError, type ModelReply, type ModelRequest, type ToolSpec } from "./model";
import { type AttemptClaim, callModel } from "./model-calls";
import type { TurnSettings } from "./turn-settings";
import { BudgetRefusal, budgetSpent, type BudgetLedger, reservationHoldMs, worstCase } from "./budget";
import { CHARS_PER_TOKEN } from "./context-view";
import { priced } from "../core/prices";
import type { Fence, Turns } from "./turns";

/** Where a compaction runs: the step it is part of (none while the session is idle) and its budget. */
export interface CompactionSite {
  /** The step it runs in; undefined while no turn is open (a caller's request). */
  fence?: Fence;
  window: number;
  /** The characters of the step's system prompt and tool specs (for the estimates). */
  fixedChars: number;
  signal: AbortSignal;
  /** Claims each summarizing call from a durable budget (the step's compactions', or the idle request's). */
  claimAttempt(lastError: string | undefined): AttemptClaim;
  /** The key its summarizing call reserves under from the session's budget (src/agent/budget.ts). */
  budgetKey: string;
}

/** A request the model refused as too long, which compaction could not save (a turn's `CONTEXT_OVERFLOW`). */
export class ContextOverflow extends Error {}

/** Whether a model call failed because its request was refused as too long. */
export function isOverflow(error: unknown): error is ModelError {
  return error instanceof ModelError && error.contextOverflow;
}

/** The diagnostic of a step refused as too long that compaction could not save. */
export function overflowFailure(window: number, error: ModelError, why: string): ContextOverflow {
  return new ContextOverflow(
    `CONTEXT_OVERFLOW: the model refused the step's request as longer than its context window ${why} ` +
      `(the session's window: ${window} tokens; set a smaller contextWindow if the model's is smaller): ${error.message}`,
  );
}

/** What a compactor works with: the session's stores, turns and settings, and the model routes. */
export interface CompactorPorts {
  stores: DriverStores;
  turns: Turns;
  /** Read at each compaction. */
  settings(): TurnSettings;
  /** The deployment's model routes. */
  models: { client(route: string): ModelClient };
  /** The session's budget, when it has one (none: model calls are bounded by steps and attempts alone). */
  budget?: BudgetLedger;
}

/**
 * Writes a session's compactions (README "Long sessions"): plans what the view's older part is,
 * has the model summarize it (a call marked `purpose: "compaction"`, retried and bounded like a
 * step's), then appends one `context/compacted` in one transaction, only if the step is still
 * current and no other compaction was written meanwhile. A crash during the call writes nothing.
 */
export class Compactor {
  readonly #ports: CompactorPorts;
  /**
   * Windows models stated when they refused a request as too long, by route: smaller than the
   * session's setting, they bound this instance's later views too (memory only: relearnt at most
   * once per instance).
   */
  readonly #statedWindows = new Map<string, number>();

  constructor(ports: CompactorPorts) {
    this.#ports = ports;
  }

  /** The session's model client, its window, and the characters its system prompt and tools add to every request. */
  sizing(tools: readonly ToolSpec[]): { client: ModelClient; window: number; fixedChars: number } {
    const settings = this.#ports.settings();
    const client = this.#ports.models.client(settings.modelRoute);
    const configured = contextWindowOf(settings.contextWindow, client, settings.defaultContextWindow);
    return {
      client,
      window: Math.min(configured, this.#statedWindows.get(settings.modelRoute) ?? configured),
      fixedChars: (settings.system?.length ?? 0) + JSON.stringify(tools).length,
    };
  }

  /** The model behind `route` stated its window in a refusal. */
  stated(route: string, window: number): void {
    this.#statedWindows.set(route, window);
  }

  /** Whether a caller's compaction is owed while no turn is open. */
  idleOwed(): boolean {
    const { stores, turns } = this.#ports;
    return (
      stores.compaction.pending() !== undefined && stores.loop.get().openTurn === null && !turns.external()
    );
  }

  /**
   * A caller's compaction while no turn is open, at once. A failed summarizing call gives the
   * request up (the threshold still compacts before a step needs it).
   */
  async compactIdle(tools: readonly ToolSpec[]): Promise<void> {
    const { stores, turns } = this.#ports;
    const { policy } = this.#ports.settings();
    const controller = new AbortController();
    const release = turns.track(controller);
    try {
      const { window, fixedChars } = this.sizing(tools);
      await this.compact("request", {
        window,
        fixedChars,
        signal: controller.signal,
        claimAttempt: () => this.claimIdle(policy.attemptsPerStep),
        budgetKey: `idle.${stores.loop.get().turns}/compaction`,
      });
    } catch (error) {
      console.warn("a requested compaction failed", error instanceof Error ? error.message : error);
      stores.transact(() => stores.compaction.done());
    } finally {
      release();
    }
  }

  /**
   * Resolves whether a compaction was written; rejects with the summarizing call's failure (a
   * `ContextOverflow` when even the summarizing call was refused as too long).
   */
  async compact(trigger: CompactionTrigger, site: CompactionSite): Promise<boolean> {
    const { stores, turns } = this.#ports;
    const settings = this.#ports.settings();
    const view = stores.log.view();
    const plan = this.#plan(trigger, site);
    if (!plan) {
      // nothing older than the turns kept verbatim: a caller's request is answered by that
      if (stores.compaction.pending() !== undefined) stores.transact(() => stores.compaction.done());
      return false;
    }
    const previous = view.compaction;
    const tokensBefore = view.estimate(site.window, site.fixedChars);
    const route = settings.compactionRoute ?? settings.modelRoute;
    const client = this.#ports.models.client(route);
    // the summarizing model's own window bounds its request, when it declares a smaller one
    let window = Math.min(site.window, client.contextWindow ?? site.window);
    let reply: ModelReply | undefined;
    for (let refusals = 0; reply === undefined; ) {
      const request = compactionRequest({
        model: route,
        previousSummary: previous?.summary,
        plan,
        window,
        params: settings.params,
        signal: site.signal,
      });
      // a summarizing call counts against the budget like a step: its worst case is reserved first
      await this.#reserve(site.budgetKey, request, route);
      try {
        reply = await callModel(client, request, settings.policy, {
          claimAttempt: site.claimAttempt,
          beforeCall: () => faultPoint(settings.sessionId, "before-compact"),
        });
      } catch (error) {
        if (!(error instanceof ModelError && error.contextOverflow) || site.signal.aborted) throw error;
        // refused as too long itself: once more within the window it states (else a quarter)
        if (++refusals > 1)
          throw new ContextOverflow(`the summarizing call was refused as too long too: ${error.message}`);
        window = Math.min(window, error.contextLimit ?? Math.floor(window / 4));
      }
    }
    await faultPoint(settings.sessionId, "after-compact");
    const summary = textOf(reply.content).trim() || "(the model wrote no summary)";
    const usage = priced(reply.usage, route, settings.prices);
    return stores.transact(() => {
      const still = site.fence ? turns.current(site.fence) : stores.loop.get().openTurn === null;
      const now = stores.log.view();
      if (!still || now.compaction?.seq !== previous?.seq) return false;
      stores.log.append("context/compacted", {
        throughSeq: plan.throughSeq,
        summary,
        tokensBefore,
        tokensAfter: now.estimateAfter(site.window, site.fixedChars, summary, plan.throughSeq),
        trigger,
        ...(usage ? { usage } : {}),
      });
      if (usage) stores.usage.addCompaction(usage);
      stores.compaction.done();
      return true;
    });
  }

  /** Reserves a summarizing call's worst case (its text plus its output cap); throws `BudgetRefusal` when it does not fit. */
  async #reserve(key: string, request: ModelRequest, route: string): Promise<void> {
    const { budget } = this.#ports;
    if (!budget) return;
    const settings = this.#ports.settings();
    const chars = (request.system?.length ?? 0) + JSON.stringify(request.turn).length;
    const worst = worstCase(
      Math.ceil(chars / CHARS_PER_TOKEN),
      request.params?.maxOutputTokens,
      route,
      settings.prices,
    );
    const refused = await budget.reserve(key, worst, reservationHoldMs(settings.policy));
    if (refused) throw new BudgetRefusal(refused);
  }

  /**
   * What to replace: the turns before the current one and the one before it. After a refused
   * request, the one before the current turn too when keeping it would leave the view over the
   * threshold (or nothing older is left).
   */
  #plan(trigger: CompactionTrigger, site: CompactionSite): CompactionPlan | undefined {
    const view = this.#ports.stores.log.view();
    const openTurn = site.fence ? site.fence.turn : null;
    const plan = view.plan(openTurn);
    if (trigger !== "overflow") return plan;
    const fits =
      plan !== undefined &&
      !overThreshold(view.estimateAfter(site.window, site.fixedChars, "", plan.throughSeq), site.window);
    return fits ? plan : (view.plan(openTurn, { tight: true }) ?? plan);
  }

  /**
   * The next summarizing call of a caller's request while the session is idle, from the request's
   * own durable count: a restart during each call gives the request up after `attemptsPerStep`,
   * and a spent token budget gives it up at once.
   */
  claimIdle(attemptsPerStep: number): AttemptClaim {
    const { stores } = this.#ports;
    const budget = this.#ports.budget?.state();
    return stores.transact((): AttemptClaim => {
      const begun = stores.compaction.pending();
      if (begun === undefined) return { ok: false, reason: "no compaction is pending" };
      // a spent token budget pays for no more model calls, summaries included
      const spent = budgetSpent(budget);
      if (spent) return { ok: false, reason: spent };
      if (begun >= attemptsPerStep)
        return { ok: false, reason: `the compaction's summarizing call failed ${begun} times` };
      stores.compaction.attempted();
      return { ok: true, attempt: begun + 1, remaining: attemptsPerStep - begun - 1 };
    });
  }
}
