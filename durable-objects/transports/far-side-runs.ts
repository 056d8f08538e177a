import type { RunResultEnvelope } from "../../src/contract/envelope";
import type { Outcome } from "../../src/contract/errors";
import type { SubagentResult } from "../../src/contract/run";
import { retryDelayMs, scrub, transportResult } from "../../src/providers/remote-protocol";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";
import type { FarSideProtocol, RemoteRow } from "../store/remote-store";
import type { RunRow } from "../store/runs";

/** Applies a run's one result through the session's ordinary `deliver` (de-duplicated by id). */
export type ResultSink = (envelope: RunResultEnvelope) => Promise<Outcome<{ applied: boolean }>>;

/** A call to the far side that failed: whether a retry may help, and why (credential-free). */
export interface FarSideFailure {
  ok: false;
  permanent: boolean;
  error: string;
}

/** Tries of the far-side interrupt after a cancellation or a deadline (best effort, bounded). */
const INTERRUPT_TRIES = 5;
/** After an unexpected failure of a transport step, it is tried again this much later. */
const CRASH_RETRY_MS = 30_000;

/**
 * What the transports of one-shot runs on a far side share (another deployment of this runtime,
 * an A2A agent): each run is a row of `remote_runs` (its protocol's), moved on by bounded steps
 * started from `pump` and redone by the alarm after an eviction. The machine: a step of the
 * run's phase (the protocol's own calls), a failure retried with backoff unless the far side
 * refused, a deadline without any successful answer, a local cancellation settled `aborted` at
 * once, and after a settlement a bounded, best-effort interrupt of the far side. Every path ends
 * in one run-result envelope applied through `deliver`, so whichever comes first wins and the
 * others are no-ops. Results never reject, and no diagnostic carries the token or a secret.
 */
export abstract class FarSideRuns implements SessionPart {
  abstract readonly name: string;
  protected readonly ctx: SessionContext;
  readonly #sink: ResultSink;
  readonly #protocol: FarSideProtocol;
  readonly #prefix: string;
  /** Who the far side is, in diagnostics ("the remote deployment", "the A2A agent"). */
  protected abstract readonly farSide: string;
  /** Transport steps running in this instance (memory only: an eviction drops them, the alarm redoes them). */
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(ctx: SessionContext, sink: ResultSink, protocol: FarSideProtocol) {
    this.ctx = ctx;
    this.#sink = sink;
    this.#protocol = protocol;
    this.#prefix = `${protocol}:`;
  }

  owns(run: RunRow): boolean {
    return !run.local && run.childId.startsWith(this.#prefix);
  }

  /** Inside a transaction: the parent cancelled the run; the transport settles it `aborted` at once. */
  requestCancel(run: RunRow): void {
    this.ctx.stores.remoteRuns.wake(run.runId, Date.now());
  }

  /** Starts the transport steps that are due and not running yet (each is bounded in time). */
  pump(): void {
    for (const row of this.ctx.stores.remoteRuns.due(this.#protocol, Date.now())) {
      if (this.#inFlight.has(row.runId)) continue;
      const work = this.#advance(row.runId)
        .catch((error: unknown) => this.#crashed(row, error))
        .finally(() => this.#inFlight.delete(row.runId));
      this.#inFlight.set(row.runId, work);
    }
  }

  /** Waits for the running transport steps; true when there were any (more may be due now). */
  async idle(): Promise<boolean> {
    if (this.#inFlight.size === 0) return false;
    await Promise.all([...this.#inFlight.values()]);
    return true;
  }

  nextDue(): number | undefined {
    return this.ctx.stores.remoteRuns.nextDue(this.#protocol);
  }

  /**
   * Applies a result for a run through `deliver` (the first result wins; a later one is a no-op)
   * and moves its transport on (`done`, or `interrupt` when the far side may still run it).
   * After a local cancellation any result is `aborted` (its output kept).
   */
  async settle(
    run: RunRow,
    result: SubagentResult,
    then: "done" | "interrupt" = "done",
  ): Promise<Outcome<{ applied: boolean }>> {
    const { stores } = this.ctx;
    const cancelled = stores.runs.get(run.runId)?.cancelRequested ?? false;
    const outcome = await this.#sink({
      v: 1,
      id: `result:${run.runId}`,
      from: run.childId,
      to: run.spec.parentSession,
      kind: "run-result",
      runId: run.runId,
      result: cancelled
        ? { output: result.output, stopReason: "aborted", diagnostic: "the run was cancelled by its parent" }
        : result,
    });
    // a result that lost (another path settled the run first) leaves the transport as it is
    if (outcome.ok && outcome.value.applied)
      stores.transact(() => stores.remoteRuns.setPhase(run.runId, then, Date.now()));
    if (!outcome.ok) {
      const error = `could not apply the result: ${outcome.code}`;
      stores.transact(() => stores.remoteRuns.failed(run.runId, error, Date.now() + CRASH_RETRY_MS));
    }
    return outcome;
  }

  /** The protocol's step for the run's phase (`create`, `prompt` or `await`); the run is live. */
  protected abstract phaseStep(run: RunRow, row: RemoteRow): Promise<void>;

  /** Asks the far side to stop the run's work; a refusal ends the tries, anything else is retried. */
  protected abstract stopFarSide(row: RemoteRow): Promise<{ ok: true } | FarSideFailure>;

  /** Everything that must never appear in a diagnostic or a log line of this row. */
  protected secretsOf(row: RemoteRow): string[] {
    return row.token === null ? [row.secret] : [row.token, row.secret];
  }

  /** One transport step of one run: the next call its phase needs, or its end. */
  async #advance(runId: string): Promise<void> {
    const { runs, remoteRuns: remote } = this.ctx.stores;
    const row = remote.get(runId);
    const run = runs.get(runId);
    if (!row || row.phase === "done") return;
    if (!run) {
      this.ctx.stores.transact(() => remote.setPhase(runId, "done", Date.now())); // nothing to settle
      return;
    }
    if (row.phase === "interrupt") return this.#interrupt(row);
    if (run.state === "settled") {
      this.ctx.stores.transact(() => remote.setPhase(runId, "done", Date.now()));
      return;
    }
    const secrets = this.secretsOf(row);
    if (run.cancelRequested)
      return this.end(run, row, transportResult("aborted", "the run was cancelled by its parent", secrets));
    const { deadlineMs } = this.ctx.remoteSettings;
    if (Date.now() >= row.contactAt + deadlineMs) {
      const last = row.lastError === null ? "" : ` (last: ${row.lastError})`;
      const text = `${this.farSide} gave no successful answer for ${Math.round(deadlineMs / 1000)} s${last}`;
      return this.end(run, row, transportResult("error", text, secrets));
    }
    return this.phaseStep(run, row);
  }

  /** Best effort: the far side stops working for a run that ended here first. */
  async #interrupt(row: RemoteRow): Promise<void> {
    const answer = await this.stopFarSide(row);
    const { remoteRuns: remote } = this.ctx.stores;
    const now = Date.now();
    this.ctx.stores.transact(() => {
      if (answer.ok || answer.permanent || row.attempts + 1 >= INTERRUPT_TRIES)
        remote.setPhase(row.runId, "done", now);
      else remote.failed(row.runId, `interrupt: ${answer.error}`, now + retryDelayMs(row.attempts + 1));
    });
  }

  /** A failed call: a refusal ends the run as `error`; anything else is retried with backoff. */
  protected async failed(run: RunRow, row: RemoteRow, failure: FarSideFailure, what: string): Promise<void> {
    if (failure.permanent) {
      const text = `${this.farSide} did not ${what}: ${failure.error}`;
      return this.end(run, row, transportResult("error", text, this.secretsOf(row)));
    }
    const now = Date.now();
    const deadline = row.contactAt + this.ctx.remoteSettings.deadlineMs;
    const nextAt = Math.max(now + 1, Math.min(now + retryDelayMs(row.attempts + 1), deadline));
    this.ctx.stores.transact(() =>
      this.ctx.stores.remoteRuns.failed(run.runId, `${what}: ${failure.error}`, nextAt),
    );
  }

  /** Ends a run here (cancelled, refused, timed out): its result, then the far-side interrupt if it may run. */
  protected async end(run: RunRow, row: RemoteRow, result: SubagentResult): Promise<void> {
    // the work may have reached the far side once it answered with its id: stop it there too
    await this.settle(run, result, row.remoteId === null ? "done" : "interrupt");
  }

  #crashed(row: RemoteRow, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`${this.name} step failed; retrying later`, scrub(message, this.secretsOf(row)));
    this.ctx.stores.transact(() =>
      this.ctx.stores.remoteRuns.failed(row.runId, "internal error", Date.now() + CRASH_RETRY_MS),
    );
  }
}
