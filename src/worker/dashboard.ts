/**
 * The dashboard, served from the package itself under the base path: `<base>/` is the page and
 * its script and styles sit beside it (relative URLs, so any base path works). `<base>` alone
 * redirects to `<base>/`. Anything else is not the dashboard's (undefined).
 *
 * Every file is served with a Content-Security-Policy that admits the dashboard's own script and
 * stylesheets only (no inline script, no eval), its API calls and event-stream WebSockets to this
 * origin only, and no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`) against
 * clickjacking. No inline style either: the dashboard sets styles through the CSSOM (ui/src/dom.ts).
 * The files (dashboard-assets.ts, some 150 KiB of text) load with the first request that may be
 * one of them, not when an isolate starts.
 */
export async function dashboardResponse(
  request: Request,
  path: string,
  base: string,
): Promise<Response | undefined> {
  if (request.method !== "GET" && request.method !== "HEAD") return undefined;
  if (path === base && base !== "") {
    const url = new URL(request.url);
    url.pathname = `${base}/`;
    return Response.redirect(url.toString(), 308);
  }
  const { DASHBOARD_FILES } = await import("./dashboard-assets");
  const file = DASHBOARD_FILES[path.slice(base.length)];
  if (!file) return undefined;
  return new Response(request.method === "HEAD" ? null : file.body, {
    headers: {
      "content-type": file.type,
      "cache-control": "no-cache",
      "content-security-policy": contentSecurityPolicy(request),
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}

/** A host name with an optional port, as a CSP source may name it (anything else is left out). */
const PLAIN_HOST = /^([a-z0-9-]+(\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(:\d{1,5})?$/i;

function contentSecurityPolicy(request: Request): string {
  // `'self'` covers same-origin WebSockets in current browsers; older ones need them named
  const host = request.headers.get("host") ?? new URL(request.url).host;
  const sockets = PLAIN_HOST.test(host) ? ` ws://${host} wss://${host}` : "";
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "object-src 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join("; ");
}
