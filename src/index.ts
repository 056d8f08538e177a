/**
 * The Worker entry (composition root): the public HTTP API, the dashboard's static assets, the
 * benchmark floor routes (only with BENCH_ROUTES = "1") and the Durable Object classes. The
 * only place besides `src/rpc/` that may import `cloudflare:*`.
 */
import { benchRoute } from "./bench-routes";
import { buildRouter } from "./http/app";

export { FloorObject } from "../durable-objects/floor-object";
export { RegistryObject } from "../durable-objects/registry-object";
export { SessionObject } from "../durable-objects/session-object";
export { RunHandle, SubagentsEntrypoint } from "./rpc/entrypoint";

const router = buildRouter();

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/bench/") && env.BENCH_ROUTES === "1") return benchRoute(request, env);
    if (!url.pathname.startsWith("/v1/") && env.ASSETS) return env.ASSETS.fetch(request);
    return router.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
