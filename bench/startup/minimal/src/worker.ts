/**
 * A newcomer's Worker with no protocol face (bench/README.md, "Startup"): `createSubagents()` from
 * the package's `subagents-edge/worker` entry (here its source, src/worker/index.ts, which the
 * package's dist/worker.js bundles with its dependencies left as imports), under `/agents`, beside
 * a route of its own, as README "Use it in your own Worker" writes it.
 */
import { createSubagents } from "../../../../src/worker/index";

interface MinimalEnv {
  SESSIONS: DurableObjectNamespace;
  REGISTRY: DurableObjectNamespace;
}

const subagents = createSubagents<MinimalEnv>({ basePath: "/agents" });

export const { SessionObject, RegistryObject } = subagents;

export default {
  async fetch(request: Request, env: MinimalEnv, ctx: ExecutionContext): Promise<Response> {
    if (new URL(request.url).pathname === "/hello") return new Response("hello from my worker");
    return subagents.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<MinimalEnv>;
