import { fail, type Outcome, ok } from "../../src/contract/errors";
import { CallbackBody, localResult, verifyCallback } from "../../src/providers/remote-protocol";
import type { RemoteRuns } from "../transports/remote-runs";
import type { SessionContext } from "../session/session-context";

/** A callback as the Worker hands it over: the raw body (the signature covers its bytes) and headers. */
export interface CallbackInput {
  timestamp: string | null;
  signature: string | null;
  body: string;
}

/**
 * Remote delegation, parent side: a signed callback from the remote deployment carrying a run's
 * result (`POST /v1/callbacks/:parentId/:runId`). Checked before anything is read or written:
 * the run must be a remote run of this session, the timestamp within the replay window and the
 * HMAC valid under the run's own secret (401 otherwise); the body must name the remote session
 * the run created. It is then applied as the run's one run-result envelope through `deliver`: a
 * callback whose result was already applied (a replay, or one that lost to polling, the deadline
 * or a cancellation) is `REPLAYED` (409) and changes nothing.
 */
export async function applyCallback(
  ctx: SessionContext,
  remote: RemoteRuns,
  runId: string,
  input: CallbackInput,
): Promise<Outcome<{ applied: true }>> {
  const row = ctx.stores.remoteRuns.get(runId);
  const run = ctx.stores.runs.get(runId);
  // only a run on another deployment of this runtime is settled by a callback
  if (!row || !run || row.protocol !== "remote") return fail("NOT_FOUND", "no such run");
  const check = await verifyCallback({ secret: row.secret, ...input, nowMs: Date.now() });
  if (check === "stale")
    return fail("UNAUTHENTICATED", "the callback's timestamp is outside the replay window");
  if (check !== "ok") return fail("UNAUTHENTICATED", "the callback's signature is not valid");
  let json: unknown;
  try {
    json = JSON.parse(input.body);
  } catch {
    return fail("MALFORMED_JSON", "the body is not valid JSON");
  }
  const body = CallbackBody.safeParse(json);
  if (!body.success) return fail("INVALID_REQUEST", "the callback body is not a result");
  if (row.remoteId === null || body.data.session !== row.remoteId)
    return fail("UNAUTHENTICATED", "the callback names another session");
  const secrets = row.token === null ? [row.secret] : [row.token, row.secret];
  const applied = await remote.settle(run, localResult(body.data.result, { cancelled: false, secrets }));
  if (!applied.ok) return applied;
  return applied.value.applied
    ? ok({ applied: true })
    : fail("REPLAYED", "this run's result was already applied");
}
