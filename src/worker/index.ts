/**
 * @module `subagents-edge/worker`: the runtime inside your own Worker (docs/embedding.md), with
 * every protocol. `createSubagents` returns the HTTP handler, the Durable Object classes and the
 * RPC entrypoint; it speaks MCP, A2A, ACP and the model APIs of the `openai:` and `workers-ai:`
 * routes unless `protocols` says otherwise (their code loads on first use, but is in the Worker's
 * bundle: `subagents-edge/core` leaves out what it is not given).
 */
import { acp } from "../protocols/acp";
import { a2a } from "../protocols/a2a";
import { mcp } from "../protocols/mcp";
import { openai } from "../protocols/openai";
import { workersAi } from "../protocols/workers-ai";
import { createSubagents as createWith, type Subagents, type SubagentsOptions } from "./create-subagents";

export * from "./exports";

/** Every protocol: `createSubagents`'s default here. */
const EVERY_PROTOCOL = [mcp, a2a, acp, openai, workersAi];

/**
 * The runtime inside a Worker (docs/embedding.md): its HTTP API (under `basePath`), its Durable
 * Object classes and its RPC entrypoint, with the Worker's own tools and models, speaking every
 * protocol (MCP, A2A, ACP, `openai:` and `workers-ai:` routes) unless `protocols` names fewer. Misconfiguration throws here, when the
 * Worker's module loads.
 */
export function createSubagents<E = Cloudflare.Env>(options: SubagentsOptions<E> = {}): Subagents<E> {
  return createWith({ ...options, protocols: options.protocols ?? EVERY_PROTOCOL });
}
