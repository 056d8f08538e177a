import { type IRequest, Router } from "itty-router";
import { fail, SubagentError } from "../contract/errors";
import { failure, json } from "../contract/respond";
import * as R from "../contract/responses";
import type { Deployment } from "../platform/deployment";
import { a2aRoutes } from "./a2a-route";
import { callbackRoutes } from "./callback-route";
import { controlRoutes } from "./control-routes";
import { delegationRoutes } from "./delegation-routes";
import { addRoutes, type Route } from "./route";
import { sessionRoutes } from "./session-routes";
import { unhandledFailure } from "./unhandled";

/**
 * The public HTTP API (docs/api.md): auth -> validate -> route to the session's object. Every error
 * is the envelope with a stable code; a client mistake is never a 5xx. Each route is declared once
 * (route.ts), with what the OpenAPI document says of it, in the module of its concern.
 */

export const VERSION = "0.1.0";

/** The API's routes under `base` (`""`: `/v1/...`), for the deployment's tools and models. */
export function buildRouter(deployment: Deployment, base = "") {
  const router = Router<IRequest, [Env, ExecutionContext]>({
    base,
    catch: (error: unknown) => {
      if (error instanceof SubagentError) return failure(error.toFailure());
      console.error("unhandled error", error instanceof Error ? error.stack : error);
      return failure(unhandledFailure(error));
    },
  });

  // the OpenAPI document is generated once per router, from the routes' own declarations and
  // the zod schemas that validate their requests, on its first request (the document's schemas
  // of the answers are built then, not at the Worker's start)
  let openApi: string | undefined;
  const routes: Route[] = [
    {
      method: "get",
      path: "/v1/health",
      summary: "Liveness and version",
      auth: "none",
      ok: [200, "ok", R.Health],
      handle: () => json({ ok: true, version: VERSION }),
    },
    {
      method: "get",
      path: "/v1/openapi.json",
      summary: "This document",
      auth: "none",
      ok: [200, "OpenAPI 3.1"],
      handle: async () => {
        if (openApi === undefined) {
          const { openApiDocument } = await import("./openapi");
          openApi = JSON.stringify(openApiDocument(base, VERSION, routes));
        }
        return new Response(openApi, { headers: { "content-type": "application/json; charset=utf-8" } });
      },
    },
    ...sessionRoutes(deployment),
    ...delegationRoutes(),
    ...controlRoutes(),
    ...callbackRoutes(),
    ...a2aRoutes(deployment, base, VERSION),
  ];
  addRoutes(router, routes);

  router.all("/v1/*", () => failure(fail("NOT_FOUND", "no such route")));
  router.all("*", () => failure(fail("NOT_FOUND", "no such route")));
  return router;
}
