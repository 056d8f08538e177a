import {
  BOUNDARY_EVENTS,
  batchOwed,
  type CursorMove,
  FINISHING_EVENTS,
  parseCursor,
  planBatch,
} from "../../src/trace/export";
import { type ExportConfig, exportConfig } from "../../src/trace/export-config";
import {
  EXPORT_TIMEOUT_MS,
  type ExportAnswer,
  nextRetry,
  parseRetry,
  readAnswer,
  type RetryState,
} from "../../src/trace/export-retry";
import { otlpTraces } from "../../src/trace/otlp";
import type { Span } from "../../src/trace/spans";
import type { DeploymentVars } from "../host/deployment-vars";
import type { Deletion } from "../deletion/deletion";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";
import { sessionSpans } from "./trace-reads";

/** While a request is out, the alarm is set this long after it began: an instance that died with it sends it again. */
const WATCHDOG_MS = EXPORT_TIMEOUT_MS + 5_000;

/**
 * OTLP/HTTP export of the session's finished spans (README "Traces", export): when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, each batch src/trace/export.ts picks is posted to
 * `<endpoint>/v1/traces` as OTLP JSON, with OTEL_EXPORTER_OTLP_HEADERS, one request at a time.
 *
 * Durable and at-least-once: the cursor (flag `trace:cursor`) moves only in a transaction after
 * the collector answered 2xx (or refused the batch for good, which counts it in `trace:dropped`);
 * an instance that dies with a request out sends the same batch again (the same spans, ids
 * included), woken by the alarm. A failure only schedules the next try (`trace:retry`, backoff in
 * src/trace/export-retry.ts), which the alarm wakes the object for.
 *
 * Never in a turn's way: `pump` only starts the work, which waits for the pass that started it to
 * run its steps; the request then runs beside the turns, and when it ends the loop is kicked to
 * send the next batch or arm the retry. Unlike a transport's calls it is not awaited by `idle`:
 * a pass waiting for a collector (up to the request's timeout) would hold back the next turn.
 * Off (no endpoint) it reads nothing and is never due; a session being deleted exports nothing.
 */
export class TraceExport implements SessionPart {
  readonly name = "trace export";
  readonly #ctx: SessionContext;
  readonly #deletion: Deletion;
  readonly #config: ExportConfig | undefined;
  /** The request out now (memory only: an eviction drops it, and the alarm sends its batch again). */
  #inFlight: { since: number; done: Promise<void> } | undefined;
  /** Whether a batch is owed, as of a log length and a cursor (asked of the log again once either moved). */
  #owed: { length: number; through: number; owed: boolean } | undefined;
  /**
   * Since when (as this instance saw it) a batch has been owed: it goes out OTEL_BSP_SCHEDULE_DELAY
   * later, with whatever else finished meanwhile (memory only: a new instance waits from its start).
   */
  #owedSince: number | undefined;

  constructor(ctx: SessionContext, deletion: Deletion, vars: DeploymentVars) {
    this.#ctx = ctx;
    this.#deletion = deletion;
    const { config, problem } = exportConfig({
      endpoint: vars.OTEL_EXPORTER_OTLP_ENDPOINT,
      headers: vars.OTEL_EXPORTER_OTLP_HEADERS,
      serviceName: vars.OTEL_SERVICE_NAME,
      scheduleDelay: vars.OTEL_BSP_SCHEDULE_DELAY,
    });
    if (problem) console.error(problem);
    this.#config = config;
  }

  /** Starts sending the next batch when one is owed and due (no await: it runs beside the pass). */
  pump(): void {
    if (this.#inFlight) return;
    const due = this.nextDue();
    if (due === undefined || due > Date.now()) return;
    const done = this.#exportNext()
      .catch((error: unknown) => this.#failed(error instanceof Error ? error.message : String(error)))
      .finally(() => {
        this.#inFlight = undefined;
        this.#ctx.kick(); // the next batch, or the alarm for the next try
      });
    this.#inFlight = { since: Date.now(), done };
  }

  /**
   * When a batch is owed: the schedule delay after it became owed (a busy session's turns share
   * a request), the next try's time after a failure, the watchdog while a request is out.
   */
  nextDue(): number | undefined {
    if (!this.#config || this.#deletion.deleting()) return undefined;
    if (this.#inFlight) return this.#inFlight.since + WATCHDOG_MS;
    if (!this.#batchOwed()) {
      this.#owedSince = undefined;
      return undefined;
    }
    this.#owedSince ??= Date.now();
    return this.#retry()?.at ?? this.#owedSince + this.#config.scheduleDelayMs;
  }

  /** Whether a unit finished after the cursor (a question for the log once per append and cursor). */
  #batchOwed(): boolean {
    const { log } = this.#ctx.stores;
    const length = log.nextSeq();
    const cursor = parseCursor(this.#ctx.stores.flags.get("trace:cursor"));
    const { through } = cursor;
    if (this.#owed?.length !== length || this.#owed.through !== through) {
      const last = Math.max(-1, ...FINISHING_EVENTS.map((type) => log.last(type, through + 1)?.seq ?? -1));
      this.#owed = { length, through, owed: batchOwed(cursor, last) };
    }
    return this.#owed.owed;
  }

  /** One batch: picked from the log, what the bounds skip stored, sent, and its answer stored. */
  async #exportNext(): Promise<void> {
    // the pass that started this runs its steps (a turn's model call) before the log is read
    await new Promise((resolve) => setTimeout(resolve, 0));
    const config = this.#config!;
    const { stores } = this.#ctx;
    const header = this.#ctx.header();
    if (!header || this.#deletion.deleting()) return;
    // one synchronous read: the cursor, the log's boundaries and its spans from the same moment
    let base = stores.flags.get("trace:cursor");
    const cursor = parseCursor(base);
    const from = Math.max(cursor.from, header.seedLength ?? 0);
    const plan = planBatch({
      sessionId: header.id,
      cursor,
      boundaries: stores.log.ofTypes(BOUNDARY_EVENTS, from),
      spans: sessionSpans(this.#ctx, from),
      upTo: stores.log.nextSeq() - 1,
      now: Date.now(),
    });
    if (plan.skip) {
      if (!this.#move(base, plan.skip, false)) return;
      base = JSON.stringify(plan.skip.cursor);
    }
    if (plan.batch.length === 0) {
      this.#move(base, plan.next, true);
      return;
    }
    const answer = await this.#send(config, plan.batch);
    switch (answer.kind) {
      case "accepted":
        this.#move(base, { ...plan.next, dropped: plan.next.dropped + answer.rejected }, true);
        // what is still owed (a backlog past one batch's bounds) waited its delay already
        this.#owedSince = 0;
        return;
      case "refused":
        console.error(
          `the OTLP collector refused ${plan.batch.length} spans (HTTP ${answer.status}): dropped`,
        );
        this.#move(base, { ...plan.next, dropped: plan.next.dropped + plan.batch.length }, true);
        return;
      case "retry":
        this.#failed(answer.why, answer.afterMs);
    }
  }

  /**
   * Posts one batch; never throws (no answer is a retry too). The timeout's timer is cleared
   * with the request, so nothing of it keeps the object awake afterwards.
   */
  async #send(config: ExportConfig, spans: Span[]): Promise<ExportAnswer> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error("no answer in time")), EXPORT_TIMEOUT_MS);
    try {
      const response = await fetch(config.url, {
        method: "POST",
        headers: { ...config.headers, "content-type": "application/json" },
        body: JSON.stringify(otlpTraces(spans, config.serviceName)),
        redirect: "manual",
        signal: abort.signal,
      });
      let body: unknown;
      if (response.ok) body = await response.json().catch(() => undefined);
      else await response.body?.cancel();
      return readAnswer(response.status, response.headers.get("retry-after"), body, Date.now());
    } catch (error) {
      return {
        kind: "retry",
        afterMs: undefined,
        why: error instanceof Error ? error.message : String(error),
      };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Stores a cursor move (and what it dropped) if the cursor is still `base`; `settled`: the
   * batch is done with, so its retry state goes. False when the session is being deleted.
   */
  #move(base: string | undefined, move: CursorMove, settled: boolean): boolean {
    const { stores } = this.#ctx;
    return stores.transact(() => {
      if (this.#deletion.deleting() || stores.flags.get("trace:cursor") !== base) return false;
      stores.flags.set("trace:cursor", JSON.stringify(move.cursor));
      if (move.dropped > 0) {
        const dropped = Number(stores.flags.get("trace:dropped") ?? 0) + move.dropped;
        stores.flags.set("trace:dropped", String(dropped));
      }
      if (settled) stores.flags.delete("trace:retry");
      return true;
    });
  }

  /**
   * A try failed (or the export itself threw): the next is due after the backoff (or the
   * collector's Retry-After). Never throws: a session erased meanwhile has nothing to store.
   */
  #failed(why: string, afterMs?: number): void {
    const { stores } = this.#ctx;
    try {
      const retry = stores.transact(() => {
        if (this.#deletion.deleting()) return undefined;
        const next = nextRetry(this.#retry(), afterMs, Date.now());
        stores.flags.set("trace:retry", JSON.stringify(next));
        return next;
      });
      if (retry)
        console.error(
          `span export failed (${why}); try ${retry.attempts + 1} in ${Math.round((retry.at - Date.now()) / 1000)} s`,
        );
    } catch (error) {
      console.error(
        "span export failed and its retry was not stored",
        error instanceof Error ? error.message : error,
      );
    }
  }

  #retry(): RetryState | undefined {
    return parseRetry(this.#ctx.stores.flags.get("trace:retry"));
  }
}
