/**
 * The Worker entry (composition root): the public HTTP API, the dashboard's static assets and
 * the Durable Object classes. The
 * only place besides `src/rpc/` that may import `cloudflare:*`.
 */
import { buildRouter } from "./http/app";

export { RegistryObject } from "../durable-objects/registry/registry-object";
export { SessionObject } from "../durable-objects/session/session-object";
export { RunHandle, SubagentsEntrypoint } from "./rpc/entrypoint";

const router = buildRouter();

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (!url.pathname.startsWith("/v1/") && env.ASSETS) return env.ASSETS.fetch(request);
    return router.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
