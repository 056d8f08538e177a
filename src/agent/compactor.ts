import type { CompactionTrigger } from "../contract/events";
import { textOf } from "../contract/content";
import { faultPoint } from "../core/faults";
import { compactionRequest } from "./compaction";
import type { DriverStores } from "./driver-stores";
import type { ModelClient } from "./model";
import { type AttemptClaim, callModel } from "./model-calls";
import type { TurnSettings } from "./turn-settings";
import type { Fence, Turns } from "./turns";

/** Where a compaction runs: the step it is part of (none while the session is idle) and its budget. */
export interface CompactionSite {
  /** The step it runs in; undefined while no turn is open (a caller's request). */
  fence?: Fence;
  window: number;
  /** The characters of the step's system prompt and tool specs (for the estimates). */
  fixedChars: number;
  signal: AbortSignal;
  /** Claims each summarizing call from a durable budget (the step's attempts, or the idle request's). */
  claimAttempt(lastError: string | undefined): AttemptClaim;
}

/** What a compactor works with: the session's stores, turns and settings, and the model routes. */
export interface CompactorPorts {
  stores: DriverStores;
  turns: Turns;
  /** Read at each compaction. */
  settings(): TurnSettings;
  /** The deployment's model routes. */
  models: { client(route: string): ModelClient };
}

/**
 * Writes a session's compactions (README "Long sessions"): plans what the view's older part is,
 * has the model summarize it (a call marked `purpose: "compaction"`, retried and bounded like a
 * step's), then appends one `context/compacted` in one transaction, only if the step is still
 * current and no other compaction was written meanwhile. A crash during the call writes nothing.
 */
export class Compactor {
  readonly #ports: CompactorPorts;

  constructor(ports: CompactorPorts) {
    this.#ports = ports;
  }

  /** Resolves whether a compaction was written; rejects with the summarizing call's failure. */
  async compact(trigger: CompactionTrigger, site: CompactionSite): Promise<boolean> {
    const { stores, turns } = this.#ports;
    const settings = this.#ports.settings();
    const view = stores.log.view();
    const openTurn = site.fence ? site.fence.turn : null;
    // a refused request keeps only the turn in progress when nothing older is left to replace
    const plan =
      view.plan(openTurn) ?? (trigger === "overflow" ? view.plan(openTurn, { tight: true }) : undefined);
    if (!plan) {
      // nothing older than the turns kept verbatim: a caller's request is answered by that
      if (stores.compaction.pending() !== undefined) stores.transact(() => stores.compaction.done());
      return false;
    }
    const previous = view.compaction;
    const tokensBefore = view.estimate(site.window, site.fixedChars);
    const route = settings.compactionRoute ?? settings.modelRoute;
    const reply = await callModel(
      this.#ports.models.client(route),
      compactionRequest({
        model: route,
        previousSummary: previous?.summary,
        plan,
        window: site.window,
        params: settings.params,
        signal: site.signal,
      }),
      settings.policy,
      {
        claimAttempt: site.claimAttempt,
        beforeCall: () => faultPoint(settings.sessionId, "before-compact"),
      },
    );
    await faultPoint(settings.sessionId, "after-compact");
    const summary = textOf(reply.content).trim() || "(the model wrote no summary)";
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
        ...(reply.usage ? { usage: reply.usage } : {}),
      });
      if (reply.usage) stores.usage.addCompaction(reply.usage);
      stores.compaction.done();
      return true;
    });
  }

  /**
   * The next summarizing call of a caller's request while the session is idle, from the request's
   * own durable count: a restart during each call gives the request up after `attemptsPerStep`.
   */
  claimIdle(attemptsPerStep: number): AttemptClaim {
    const { stores } = this.#ports;
    return stores.transact((): AttemptClaim => {
      const begun = stores.compaction.pending();
      if (begun === undefined) return { ok: false, reason: "no compaction is pending" };
      if (begun >= attemptsPerStep)
        return { ok: false, reason: `the compaction's summarizing call failed ${begun} times` };
      stores.compaction.attempted();
      return { ok: true, attempt: begun + 1, remaining: attemptsPerStep - begun - 1 };
    });
  }
}
