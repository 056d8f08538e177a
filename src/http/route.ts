import type { IRequest, RouterType } from "itty-router";
import type * as z from "zod";

/** Who a route admits, as the OpenAPI document says it. */
export type Auth = "none" | "admin" | "deployment" | "session" | "any" | "signed";

export type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;

/**
 * One route of the HTTP API, declared once: what the router serves and what the OpenAPI document
 * (openapi.ts) says of it come from the same declaration, so a route cannot be served undocumented
 * or documented unserved. `path` is in OpenAPI's form (`{id}` for a path parameter).
 */
export interface Route {
  method: "get" | "post" | "put" | "delete";
  path: string;
  summary: string;
  auth: Auth;
  /** The zod schema its body is validated with. */
  body?: z.ZodType;
  /** The zod schema its query is validated with. */
  query?: z.ZodType;
  /** Its success: status, description and the schema of the body (none: no JSON body). */
  ok: [number, string, z.ZodType?];
  /** Other content types it answers with (the event stream, MCP). */
  raw?: string[];
  /** The router serves it for every HTTP method (its handler answers the ones it does not take); documented by `method`. */
  everyMethod?: true;
  handle: Handler;
}

/** The router's patterns for `routes`. */
export function addRoutes(
  router: RouterType<IRequest, [Env, ExecutionContext]>,
  routes: readonly Route[],
): void {
  for (const route of routes) {
    const path = route.path.replace(/\{(\w+)\}/g, ":$1");
    if (route.everyMethod) router.all(path, route.handle);
    else router[route.method](path, route.handle);
  }
}
