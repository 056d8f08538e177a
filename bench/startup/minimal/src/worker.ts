/**
 * A newcomer's Worker with no protocol face (bench/README.md, "Startup"): `createSubagents()` from
 * the package's `subagents-edge/core` entry (here its source, src/worker/core.ts, which the
 * package's dist/core.js bundles with its dependencies left as imports), under `/agents`, beside a
 * route of its own, as README "Protocols and bundle size" writes it: no MCP, A2A or ACP SDK in
 * its bundle.
 */
import { createSubagents } from "../../../../src/worker/core";

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
