import { fail } from "../contract/errors";
import { failure } from "../contract/respond";
import { quote } from "../core/quote";

/**
 * The `Host` check (DNS rebinding): `ALLOWED_HOSTS` is a comma-separated list of host names the
 * Worker answers (ports ignored, `[::1]` for IPv6); empty or unset, any host. `npm start` and
 * `npm run dev` set the loopback names, so a web page whose own name resolves to 127.0.0.1 cannot
 * talk to the local server. A refused request gets `403` with the error envelope, before routing.
 */

/** A host as compared: lower case, without port or trailing dot (`[::1]` keeps its brackets). */
function hostName(raw: string): string {
  let host = raw.trim().toLowerCase();
  if (host.startsWith("[")) {
    const end = host.indexOf("]");
    host = end < 0 ? host : host.slice(0, end + 1);
  } else {
    const colon = host.indexOf(":");
    if (colon >= 0 && colon === host.lastIndexOf(":")) host = host.slice(0, colon);
  }
  return host.replace(/\.$/, "");
}

/** The names of an `ALLOWED_HOSTS` value; empty: every host is allowed. */
export function hostNames(raw: string | undefined): ReadonlySet<string> {
  return new Set(
    (raw ?? "")
      .split(",")
      .map(hostName)
      .filter((h) => h.length > 0),
  );
}

/** Whether `host` (a `Host` header, port and all) is one of `names`. */
export function allowedHost(host: string, names: ReadonlySet<string>): boolean {
  const name = hostName(host);
  return name.length > 0 && names.has(name);
}

/** ALLOWED_HOSTS, parsed once per value. */
let cache: { raw: string | undefined; names: ReadonlySet<string> } | undefined;

/** The refusal of a request whose `Host` is not allowed, or undefined when it may go on. */
export function hostRefusal(request: Request, raw: string | undefined): Response | undefined {
  if (cache === undefined || cache.raw !== raw) cache = { raw, names: hostNames(raw) };
  if (cache.names.size === 0) return undefined;
  const host = request.headers.get("host") ?? new URL(request.url).host;
  if (allowedHost(host, cache.names)) return undefined;
  return failure(
    fail("UNAUTHORIZED", `this server does not answer for the host ${quote(host)} (ALLOWED_HOSTS)`),
  );
}
