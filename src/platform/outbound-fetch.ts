import { checkOutboundUrl, type SecureScheme } from "../contract/outbound-url";

/**
 * The one `fetch` for URLs a caller set (README, Security and limits: "Outbound requests the runtime makes for its
 * callers"): remote providers, A2A agents (card and endpoint), MCP servers, callbacks. The platform
 * never follows a redirect (`redirect: "manual"` on every request); this does, only on the same
 * origin and at most `MAX_REDIRECTS` times, so a token or a signed body never reaches an origin
 * the caller did not name. Every request's URL passes the outbound rule first (a URL stored before
 * the rule existed, an A2A card's endpoint learned at run time). A refusal throws
 * `OutboundRefused` before anything is sent to the refused URL.
 */

export const MAX_REDIRECTS = 5;

/** A request this runtime would not send (the rule, another origin, a redirect away). */
export class OutboundRefused extends Error {
  override readonly name = "OutboundRefused";
}

export interface OutboundOptions {
  /** The origin every request must be on (default: the first request's). */
  origin?: string;
  /** The secure schemes allowed (default `["https"]`; plain http to loopback hosts either way). */
  schemes?: readonly SecureScheme[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers that describe a body, dropped when a redirect turns the request into a bodiless GET. */
const BODY_HEADERS = [
  "content-type",
  "content-length",
  "content-encoding",
  "content-language",
  "content-location",
];

export async function outboundFetch(
  input: RequestInfo | URL,
  init: RequestInit = {},
  options: OutboundOptions = {},
): Promise<Response> {
  const first = new Request(input, init);
  const signal = init.signal ?? (input instanceof Request ? input.signal : undefined);
  const origin = options.origin ?? (URL.canParse(first.url) ? new URL(first.url).origin : undefined);
  const schemes = options.schemes ?? ["https"];
  // read once, so a same-origin 307/308 can send it again
  let body: ArrayBuffer | undefined = first.body === null ? undefined : await first.arrayBuffer();
  let method = first.method;
  const headers = new Headers(first.headers);
  let url = first.url;
  for (let redirects = 0; ; redirects++) {
    const problem = checkOutboundUrl(url, { schemes, ...(origin === undefined ? {} : { origin }) });
    if (problem !== undefined) throw new OutboundRefused(`the URL ${problem}: not sent`);
    signal?.throwIfAborted();
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      redirect: "manual",
      ...(signal ? { signal } : {}),
    });
    const location = REDIRECTS.has(response.status) ? response.headers.get("location") : null;
    if (location === null) return response;
    await response.body?.cancel();
    const next = URL.canParse(location, url) ? new URL(location, url) : undefined;
    if (next === undefined)
      throw new OutboundRefused(`redirected (HTTP ${response.status}) to an unreadable URL`);
    if (next.origin !== origin)
      throw new OutboundRefused(
        `redirected (HTTP ${response.status}) to another origin (${next.origin}): not followed`,
      );
    if (redirects >= MAX_REDIRECTS)
      throw new OutboundRefused(`more than ${MAX_REDIRECTS} redirects: not followed`);
    // the fetch standard's rewrite: a 303 (but for HEAD), or a 301/302 after a POST, becomes a GET
    if (
      (response.status === 303 && method !== "HEAD") ||
      ((response.status === 301 || response.status === 302) && method === "POST")
    ) {
      method = "GET";
      body = undefined;
      for (const name of BODY_HEADERS) headers.delete(name);
    }
    url = next.href;
  }
}
