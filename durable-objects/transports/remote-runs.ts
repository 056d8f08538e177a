import { compact } from "../../src/core/compact";
import type { RunResultEnvelope } from "../../src/contract/envelope";
import { type Outcome, ok } from "../../src/contract/errors";
import { ServiceUrl } from "../../src/contract/wire";
import type { SubagentResult } from "../../src/contract/run";
import { childJurisdiction, placementOf } from "../../src/core/placement";
import type { ProviderKind } from "../../src/contract/provider";
import { type CallOutcome, callRemote, type RemoteTarget } from "../../src/providers/remote-client";
import {
  callbackUrl,
  foldEvents,
  localResult,
  newCallbackSecret,
  pollDelayMs,
  RemoteCreated,
  RemoteEventPage,
  remoteKey,
  retryDelayMs,
  scrub,
  transportResult,
} from "../../src/providers/remote-protocol";
import { prepareOutOfProcess, publishOutOfProcess } from "./out-of-process";
import type { RemoteRequest, RemoteRow } from "../store/remote-store";
import type { RunRow } from "../store/runs";
import type { SessionPart } from "../session/part";
import type { ChildTransport, TransportStart } from "./transport";
import type { SessionContext } from "../session/session-context";

/** The child id prefix of remote runs (`remote:<runId>`): how the parent tells them from other runs. */
const PREFIX = "remote:";

/** Without REMOTE_DEADLINE_SECONDS: a remote with no successful answer for 10 minutes is gone. */
const DEFAULT_DEADLINE_SECONDS = 600;

/** The deployment's remote settings: PUBLIC_URL (for callbacks; invalid or empty: polling only) and the deadline. */
export function remoteSettings(env: { PUBLIC_URL?: string; REMOTE_DEADLINE_SECONDS?: string }): {
  publicUrl: string | undefined;
  deadlineMs: number;
} {
  const url = ServiceUrl.safeParse(env.PUBLIC_URL);
  const seconds = Number(env.REMOTE_DEADLINE_SECONDS);
  return {
    publicUrl: url.success ? url.data : undefined,
    deadlineMs: (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_DEADLINE_SECONDS) * 1000,
  };
}

/** Tries of the remote interrupt after a cancellation or a deadline (best effort, bounded). */
const INTERRUPT_TRIES = 5;
/** After an unexpected failure of a transport step, it is tried again this much later. */
const CRASH_RETRY_MS = 30_000;

/** Applies a run's one result through the session's ordinary `deliver` (de-duplicated by id). */
export type ResultSink = (envelope: RunResultEnvelope) => Promise<Outcome<{ applied: boolean }>>;

/**
 * Remote delegation, parent side: a one-shot run handed to another deployment of this runtime.
 * Publication is local and immediate (the run row, its transport row and `subagent/start` in one
 * transaction; the run id is parent-scoped, never the remote session's id); the transport then
 * creates the remote session (idempotency key from the run id), sends the prompt (same key, so a
 * retry never starts twice) and waits for the first turn's end: a signed callback
 * (remote-callbacks.ts) or, as the fallback, polling the remote's events with backoff. Every
 * path ends in one run-result envelope applied through `deliver`, so whichever comes first wins
 * and the others are no-ops. The result never rejects: transport failures become `error` with a
 * bounded diagnostic (no credentials), anything after a local cancellation `aborted`, and a remote
 * that gives no successful answer for REMOTE_DEADLINE_SECONDS ends the run as `error`.
 */
export class RemoteRuns implements ChildTransport, SessionPart {
  readonly name = "remote transport";
  readonly #ctx: SessionContext;
  readonly #sink: ResultSink;
  /** Transport steps running in this instance (memory only: an eviction drops them, the alarm redoes them). */
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(ctx: SessionContext, sink: ResultSink) {
    this.#ctx = ctx;
    this.#sink = sink;
  }

  runs(kind: ProviderKind): boolean {
    return kind === "remote";
  }

  owns(run: RunRow): boolean {
    return !run.local && run.childId.startsWith(PREFIX);
  }

  /** Publishes a remote run (no I/O); the transport starts with the next drive. Resolves the run id. */
  async start({ request, origin, provider, descriptor }: TransportStart): Promise<Outcome<string>> {
    const ctx = this.#ctx;
    const header = ctx.header()!;
    const prepared = prepareOutOfProcess(ctx, request, provider, "remote");
    if (!prepared.ok) return prepared;
    const jurisdiction = childJurisdiction(header.jurisdiction, request.jurisdiction);
    if (!jurisdiction.ok) return jurisdiction;
    const { runId, prompt } = prepared.value;
    const placement = placementOf({ jurisdiction: jurisdiction.value, locationHint: request.locationHint });
    const { publicUrl } = ctx.remoteSettings;
    const remoteRequest: RemoteRequest = {
      prompt,
      ...compact({ label: request.label }),
      ...compact({ model: request.model }),
      ...placement,
      delegationDepth: prepared.value.depth,
      ...(publicUrl === undefined ? {} : { callbackUrl: callbackUrl(publicUrl, header.id, runId) }),
    };
    const now = Date.now();
    ctx.stores.transact(() => {
      // the remote deployment picks its own default model when none is named
      publishOutOfProcess(
        ctx,
        prepared.value,
        { provider, descriptor, request, origin, defaultModel: "remote-default", placement },
        now,
      );
      ctx.stores.remoteRuns.insert(
        {
          runId,
          url: provider.url!,
          token: provider.token ?? null,
          secret: newCallbackSecret(),
          request: remoteRequest,
        },
        now,
      );
    });
    ctx.kick();
    return ok(runId);
  }

  /** Inside a transaction: the parent cancelled the run; the transport settles it `aborted` at once. */
  requestCancel(run: RunRow): void {
    this.#ctx.stores.remoteRuns.wake(run.runId, Date.now());
  }

  /** Starts the transport steps that are due and not running yet (each is bounded in time). */
  pump(): void {
    for (const row of this.#ctx.stores.remoteRuns.due(Date.now())) {
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
    return this.#ctx.stores.remoteRuns.nextDue();
  }

  /**
   * Applies a result for a run through `deliver` (the first result wins; a later one is a no-op)
   * and moves its transport on (`done`, or `interrupt` when the remote session may still run).
   * After a local cancellation any result is `aborted` (its output kept).
   */
  async settle(
    run: RunRow,
    result: SubagentResult,
    then: "done" | "interrupt" = "done",
  ): Promise<Outcome<{ applied: boolean }>> {
    const { stores } = this.#ctx;
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

  /** One transport step of one run: the next call its phase needs, or its end. */
  async #advance(runId: string): Promise<void> {
    const { runs, remoteRuns: remote } = this.#ctx.stores;
    const row = remote.get(runId);
    const run = runs.get(runId);
    if (!row || row.phase === "done") return;
    if (!run) {
      this.#ctx.stores.transact(() => remote.setPhase(runId, "done", Date.now())); // nothing to settle
      return;
    }
    if (row.phase === "interrupt") return this.#interrupt(row);
    if (run.state === "settled") {
      this.#ctx.stores.transact(() => remote.setPhase(runId, "done", Date.now()));
      return;
    }
    const secrets = secretsOf(row);
    if (run.cancelRequested)
      return this.#end(run, row, transportResult("aborted", "the run was cancelled by its parent", secrets));
    const { deadlineMs } = this.#ctx.remoteSettings;
    if (Date.now() >= row.contactAt + deadlineMs) {
      const last = row.lastError === null ? "" : ` (last: ${row.lastError})`;
      const text = `the remote deployment gave no successful answer for ${Math.round(deadlineMs / 1000)} s${last}`;
      return this.#end(run, row, transportResult("error", text, secrets));
    }
    switch (row.phase) {
      case "create":
        return this.#create(run, row);
      case "prompt":
        return this.#prompt(run, row);
      case "await":
        return this.#poll(run, row);
    }
  }

  async #create(run: RunRow, row: RemoteRow): Promise<void> {
    const { request } = row;
    const { callbackUrl: url, prompt: _prompt, ...fields } = request;
    const body = {
      ...fields,
      idempotencyKey: remoteKey(run.runId),
      ...(url === undefined ? {} : { callback: { url, secret: row.secret } }),
    };
    const answer = await callRemote(target(row), "POST", "/v1/sessions", body);
    if (!answer.ok) return this.#failed(run, row, answer, "create the remote session");
    const created = RemoteCreated.safeParse(answer.body);
    if (!created.success || (request.jurisdiction && created.data.jurisdiction !== request.jurisdiction)) {
      const what = created.success
        ? `place the session in jurisdiction ${request.jurisdiction}`
        : "create a session";
      return this.#failed(run, row, { ok: false, permanent: true, error: "its answer says otherwise" }, what);
    }
    const now = Date.now();
    const { remoteRuns: remote } = this.#ctx.stores;
    this.#ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "create") return;
      remote.advance(run.runId, { phase: "prompt", nextAt: now, now, remoteId: created.data.id });
      this.#ctx.stores.log.append("subagent/remote", {
        runId: run.runId,
        kind: "remote",
        remoteId: created.data.id,
      });
    });
  }

  async #prompt(run: RunRow, row: RemoteRow): Promise<void> {
    const path = `/v1/sessions/${row.remoteId}/messages`;
    const body = { content: row.request.prompt, idempotencyKey: remoteKey(run.runId) };
    const answer = await callRemote(target(row), "POST", path, body);
    if (!answer.ok) return this.#failed(run, row, answer, "accept the prompt");
    const now = Date.now();
    const { remoteRuns: remote } = this.#ctx.stores;
    this.#ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "prompt") return;
      remote.advance(run.runId, { phase: "await", nextAt: now + pollDelayMs(0), now });
    });
  }

  /** The fallback to the callback: reads the remote session's events until its first turn ends. */
  async #poll(run: RunRow, row: RemoteRow): Promise<void> {
    const path = `/v1/sessions/${row.remoteId}/events?after=${row.cursor}&limit=500`;
    const answer = await callRemote(target(row), "GET", path);
    if (!answer.ok) return this.#failed(run, row, answer, "show the session's events");
    const page = RemoteEventPage.safeParse(answer.body);
    if (!page.success)
      return this.#failed(run, row, { ok: false, permanent: false, error: "unreadable page" }, "show events");
    const folded = foldEvents({ cursor: row.cursor, output: row.output }, page.data);
    if (folded.result) {
      const result = localResult(folded.result, { cancelled: false, secrets: secretsOf(row) });
      await this.settle(run, result);
      return;
    }
    const now = Date.now();
    const { remoteRuns: remote } = this.#ctx.stores;
    const nextAt =
      page.data.next !== null
        ? now
        : Math.min(now + pollDelayMs(row.polls + 1), now + this.#ctx.remoteSettings.deadlineMs);
    this.#ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "await") return;
      remote.advance(run.runId, { phase: "await", nextAt, now, poll: folded.state });
    });
  }

  /** Best effort: the remote session stops working for a run that ended here first. */
  async #interrupt(row: RemoteRow): Promise<void> {
    const answer = await callRemote(target(row), "POST", `/v1/sessions/${row.remoteId}/interrupt`);
    const { remoteRuns: remote } = this.#ctx.stores;
    const now = Date.now();
    this.#ctx.stores.transact(() => {
      if (answer.ok || answer.permanent || row.attempts + 1 >= INTERRUPT_TRIES)
        remote.setPhase(row.runId, "done", now);
      else remote.failed(row.runId, `interrupt: ${answer.error}`, now + retryDelayMs(row.attempts + 1));
    });
  }

  /** A failed call: a refusal ends the run as `error`; anything else is retried with backoff. */
  async #failed(
    run: RunRow,
    row: RemoteRow,
    failure: Extract<CallOutcome, { ok: false }>,
    what: string,
  ): Promise<void> {
    if (failure.permanent) {
      const text = `the remote deployment did not ${what}: ${failure.error}`;
      return this.#end(run, row, transportResult("error", text, secretsOf(row)));
    }
    const now = Date.now();
    const deadline = row.contactAt + this.#ctx.remoteSettings.deadlineMs;
    const nextAt = Math.max(now + 1, Math.min(now + retryDelayMs(row.attempts + 1), deadline));
    this.#ctx.stores.transact(() =>
      this.#ctx.stores.remoteRuns.failed(run.runId, `${what}: ${failure.error}`, nextAt),
    );
  }

  /** Ends a run here (cancelled, refused, timed out): its result, then the remote interrupt if it may run. */
  async #end(run: RunRow, row: RemoteRow, result: SubagentResult): Promise<void> {
    // the prompt may have reached the remote once the create answered: stop it there too
    await this.settle(run, result, row.remoteId === null ? "done" : "interrupt");
  }

  #crashed(row: RemoteRow, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    console.error("remote transport step failed; retrying later", scrub(message, secretsOf(row)));
    this.#ctx.stores.transact(() =>
      this.#ctx.stores.remoteRuns.failed(row.runId, "internal error", Date.now() + CRASH_RETRY_MS),
    );
  }
}

function secretsOf(row: RemoteRow): string[] {
  return row.token === null ? [row.secret] : [row.token, row.secret];
}

function target(row: RemoteRow): RemoteTarget {
  return { url: row.url, token: row.token, secrets: secretsOf(row) };
}
