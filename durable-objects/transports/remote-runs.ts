import { compact } from "../../src/core/compact";
import { type Outcome, ok } from "../../src/contract/errors";
import { childJurisdiction, placementOf } from "../../src/core/placement";
import type { ProviderKind } from "../../src/contract/provider";
import { callRemote, type RemoteTarget } from "../../src/providers/remote-client";
import {
  callbackUrl,
  foldEvents,
  localResult,
  newCallbackSecret,
  pollDelayMs,
  RemoteCreated,
  RemoteEventPage,
  remoteKey,
} from "../../src/providers/remote-protocol";
import { FarSideRuns, type ResultSink } from "./far-side-runs";
import { prepareOutOfProcess, publishOutOfProcess, traceparentOfRun } from "./out-of-process";
import type { RemoteRequest, RemoteRow } from "../store/remote-store";
import type { RunRow } from "../store/runs";
import type { ChildTransport, TransportStart } from "./transport";
import type { SessionContext } from "../session/session-context";

export type { ResultSink };

/**
 * Remote delegation, parent side: a one-shot run handed to another deployment of this runtime.
 * Publication is local and immediate (the run row, its transport row and `subagent/start` in one
 * transaction; the run id is parent-scoped, never the remote session's id); the transport then
 * creates the remote session (idempotency key from the run id), sends the prompt (same key, so a
 * retry never starts twice) and waits for the first turn's end: a signed callback
 * (remote-callbacks.ts) or, as the fallback, polling the remote's events with backoff. What every
 * far side shares (retries, the REMOTE_DEADLINE_SECONDS deadline, cancellation, one result
 * through `deliver`, the interrupt after it) is far-side-runs.ts.
 */
export class RemoteRuns extends FarSideRuns implements ChildTransport {
  readonly name = "remote transport";
  protected readonly farSide = "the remote deployment";

  constructor(ctx: SessionContext, sink: ResultSink) {
    super(ctx, sink, "remote");
  }

  runs(kind: ProviderKind): boolean {
    return kind === "remote";
  }

  /** Publishes a remote run (no I/O); the transport starts with the next drive. Resolves the run id. */
  async start({ request, origin, provider, descriptor }: TransportStart): Promise<Outcome<string>> {
    const ctx = this.ctx;
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
          protocol: "remote",
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

  protected phaseStep(run: RunRow, row: RemoteRow): Promise<void> {
    switch (row.phase) {
      case "create":
        return this.#create(run, row);
      case "prompt":
        return this.#prompt(run, row);
      default:
        return this.#poll(run, row);
    }
  }

  protected async stopFarSide(row: RemoteRow) {
    const answer = await callRemote(this.#target(row), "POST", `/v1/sessions/${row.remoteId}/interrupt`);
    return answer.ok ? { ok: true as const } : answer;
  }

  async #create(run: RunRow, row: RemoteRow): Promise<void> {
    const { request } = row;
    const { callbackUrl: url, prompt: _prompt, ...fields } = request;
    const body = {
      ...fields,
      idempotencyKey: remoteKey(run.runId),
      ...(url === undefined ? {} : { callback: { url, secret: row.secret } }),
    };
    const answer = await callRemote(this.#target(row, run), "POST", "/v1/sessions", body);
    if (!answer.ok) return this.failed(run, row, answer, "create the remote session");
    const created = RemoteCreated.safeParse(answer.body);
    if (!created.success || (request.jurisdiction && created.data.jurisdiction !== request.jurisdiction)) {
      const what = created.success
        ? `place the session in jurisdiction ${request.jurisdiction}`
        : "create a session";
      return this.failed(run, row, { ok: false, permanent: true, error: "its answer says otherwise" }, what);
    }
    const now = Date.now();
    const { remoteRuns: remote } = this.ctx.stores;
    this.ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "create") return;
      remote.advance(run.runId, { phase: "prompt", nextAt: now, now, remoteId: created.data.id });
      this.ctx.stores.log.append("subagent/remote", {
        runId: run.runId,
        kind: "remote",
        remoteId: created.data.id,
      });
    });
  }

  async #prompt(run: RunRow, row: RemoteRow): Promise<void> {
    const path = `/v1/sessions/${row.remoteId}/messages`;
    const body = { content: row.request.prompt, idempotencyKey: remoteKey(run.runId) };
    const answer = await callRemote(this.#target(row, run), "POST", path, body);
    if (!answer.ok) return this.failed(run, row, answer, "accept the prompt");
    const now = Date.now();
    const { remoteRuns: remote } = this.ctx.stores;
    this.ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "prompt") return;
      remote.advance(run.runId, { phase: "await", nextAt: now + pollDelayMs(0), now });
    });
  }

  /** The fallback to the callback: reads the remote session's events until its first turn ends. */
  async #poll(run: RunRow, row: RemoteRow): Promise<void> {
    const path = `/v1/sessions/${row.remoteId}/events?after=${row.cursor}&limit=500`;
    const answer = await callRemote(this.#target(row, run), "GET", path);
    if (!answer.ok) return this.failed(run, row, answer, "show the session's events");
    const page = RemoteEventPage.safeParse(answer.body);
    if (!page.success)
      return this.failed(run, row, { ok: false, permanent: false, error: "unreadable page" }, "show events");
    const folded = foldEvents({ cursor: row.cursor, output: row.output }, page.data);
    if (folded.result) {
      const result = localResult(folded.result, { cancelled: false, secrets: this.secretsOf(row) });
      await this.settle(run, result);
      return;
    }
    const now = Date.now();
    const { remoteRuns: remote } = this.ctx.stores;
    const nextAt =
      page.data.next !== null
        ? now
        : Math.min(now + pollDelayMs(row.polls + 1), now + this.ctx.remoteSettings.deadlineMs);
    this.ctx.stores.transact(() => {
      if (remote.get(run.runId)?.phase !== "await") return;
      remote.advance(run.runId, { phase: "await", nextAt, now, poll: folded.state });
    });
  }

  /** `run`: the run a request is for (its start's span goes as `traceparent`). */
  #target(row: RemoteRow, run?: RunRow): RemoteTarget {
    return {
      url: row.url,
      token: row.token,
      secrets: this.secretsOf(row),
      traceparent: traceparentOfRun(run),
    };
  }
}
