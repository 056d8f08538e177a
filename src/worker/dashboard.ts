import { DASHBOARD_FILES } from "./dashboard-assets";

/**
 * The dashboard, served from the package itself under the base path: `<base>/` is the page and
 * its script and styles sit beside it (relative URLs, so any base path works). `<base>` alone
 * redirects to `<base>/`. Anything else is not the dashboard's (undefined).
 */
export function dashboardResponse(request: Request, path: string, base: string): Response | undefined {
  if (request.method !== "GET" && request.method !== "HEAD") return undefined;
  if (path === base && base !== "") {
    const url = new URL(request.url);
    url.pathname = `${base}/`;
    return Response.redirect(url.toString(), 308);
  }
  const file = DASHBOARD_FILES[path.slice(base.length)];
  if (!file) return undefined;
  return new Response(request.method === "HEAD" ? null : file.body, {
    headers: {
      "content-type": file.type,
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}
