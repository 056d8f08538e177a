import { quote } from "../../../src/core/quote";
import type { RunOrigin } from "../../../src/agent/host";
import type { RunResultEnvelope } from "../../../src/contract/envelope";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import type { RunView, StartRequest } from "../../../src/contract/run";
import { checkStart } from "../../../src/providers/start-checks";
import type { EnvelopeHandlers, SessionPart } from "../../session/part";
import type { SessionContext } from "../../session/session-context";
import type { RunRow } from "../../store/runs";
import type { ChildTransport } from "../../transports/transport";
import type { RunLedger } from "./run-ledger";

/**
 * One-shot runs, parent side (semantics.md §5): a start is checked (start-checks.ts, in the
 * documented order) and handed to the transport of its provider's kind (transports/); the run's
 * one result, from whichever transport, is applied through the ledger (`subagent/end`, the tool
 * result, long-poll waiters). A tool call re-run after a crash re-attaches to its run by call key.
 */
export class OneShotRuns implements SessionPart {
  readonly name = "one-shot runs";
  readonly envelopes: EnvelopeHandlers = {
    "run-result": (envelope) => {
      this.#applyResult(envelope);
      return false;
    },
  };
  readonly #ctx: SessionContext;
  readonly #ledger: RunLedger;
  readonly #transports: readonly ChildTransport[];

  constructor(ctx: SessionContext, ledger: RunLedger, transports: readonly ChildTransport[]) {
    this.#ctx = ctx;
    this.#ledger = ledger;
    this.#transports = transports;
  }

  async start(request: StartRequest, origin?: RunOrigin): Promise<Outcome<RunView>> {
    const { runs } = this.#ctx.stores;
    const existing = origin && runs.byCallKey(origin.callKey);
    if (existing) return ok(this.view(existing)); // a re-run tool call re-attaches
    const checked = checkStart(request.provider, await this.#ctx.provider(request.provider), request);
    if (!checked.ok) return checked;
    const raced = origin && runs.byCallKey(origin.callKey);
    if (raced) return ok(this.view(raced));
    const { provider } = checked.value;
    const transport = this.#transports.find((t) => t.runs(provider.kind));
    if (!transport) return fail("NO_PROVIDER", `no transport runs providers of kind ${provider.kind}`);
    const started = await transport.start({ request, origin, ...checked.value });
    return started.ok ? ok(this.view(runs.get(started.value)!)) : started;
  }

  view(run: RunRow): RunView {
    return this.#ledger.view(run);
  }

  waitFor(runId: string, waitMs: number): Promise<RunRow | undefined> {
    return this.#ledger.waitFor(runId, waitMs);
  }

  /** Dispose: cancel the child (idempotent); the result arrives as `aborted` unless it was already in. */
  dispose(runId: string, reason?: string): Outcome<{ accepted: true }> {
    const run = this.#ctx.stores.runs.get(runId);
    if (!run) return fail("NOT_FOUND", `no run ${quote(runId)}`);
    if (run.state !== "settled") {
      this.#ctx.stores.transact(() => this.requestCancel(run, reason));
      this.#ctx.kick();
    }
    return ok({ accepted: true });
  }

  /** Inside a transaction: marks the run cancelled and has its transport cancel it. */
  requestCancel(run: RunRow, reason?: string): void {
    this.#ctx.stores.runs.requestCancel(run.runId);
    this.#transports.find((t) => t.owns(run))?.requestCancel(run, reason);
  }

  /** A turn that ends while its foreground children still run cancels them (the tool's signal). */
  onTurnEnd(turn: number): void {
    for (const run of this.#ctx.stores.runs.foregroundOfTurn(turn))
      if (!run.cancelRequested) this.requestCancel(run);
  }

  /** Inside the delivery transaction: a child's (or a transport's) one result. */
  #applyResult(envelope: RunResultEnvelope): void {
    this.#ledger.record(envelope.runId, envelope.from, envelope.result);
  }
}
