import { OutboundRefused, outboundFetch } from "../platform/outbound-fetch";
import { isPermanent, RemoteError, scrub } from "./remote-protocol";

/**
 * One call to another deployment's HTTP API with the remote provider's bearer token: bounded in
 * time, never throwing. A failure says whether a retry may help (`permanent` when the remote
 * refused the request itself, or when this runtime refused to send it: a URL that breaks the
 * outbound rule, a redirect to another origin) and why, in words that never contain the token or
 * a secret. Requests go through `outboundFetch`: redirects are followed on the same origin only.
 */

/** A call that gets no answer within this long has failed (it is retried with backoff). */
export const REMOTE_CALL_TIMEOUT_MS = 10_000;

export type CallOutcome =
  | { ok: true; status: number; body: unknown }
  | { ok: false; permanent: boolean; status?: number; error: string };

export interface RemoteTarget {
  url: string;
  token: string | null;
  /** Everything that must never appear in an error text (token, callback secret). */
  secrets: readonly string[];
  /** The span that asked for the run (W3C `traceparent`): the far side's work joins its trace. */
  traceparent?: string | undefined;
}

export async function callRemote(
  target: RemoteTarget,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<CallOutcome> {
  const headers: Record<string, string> = {};
  if (target.token !== null) headers.authorization = `Bearer ${target.token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  if (target.traceparent) headers.traceparent = target.traceparent;
  // a timer of our own, cleared when the call is over (AbortSignal.timeout's would outlive it)
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timed out")), REMOTE_CALL_TIMEOUT_MS);
  let response: Response;
  let parsed: unknown;
  try {
    response = await outboundFetch(`${target.url.replace(/\/+$/, "")}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: controller.signal,
    });
    try {
      const text = await response.text();
      parsed = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  } catch (error) {
    if (error instanceof OutboundRefused)
      return { ok: false, permanent: true, error: scrub(error.message, target.secrets) };
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { ok: false, permanent: false, error: scrub(`no answer (${reason})`, target.secrets) };
  } finally {
    clearTimeout(timer);
  }
  if (response.ok) return { ok: true, status: response.status, body: parsed };
  const code = RemoteError.safeParse(parsed);
  const error = `HTTP ${response.status}${code.success ? ` ${code.data.error.code}` : ""}`;
  return { ok: false, permanent: isPermanent(response.status), status: response.status, error };
}
