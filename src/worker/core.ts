/**
 * @module `subagents-edge/core`: the runtime inside your own Worker (docs/embedding.md) with only
 * the protocols you give it. `createSubagents` is `subagents-edge/worker`'s, except that it speaks
 * no MCP, A2A or ACP and serves no `openai:` or `workers-ai:` route unless `protocols` names them
 * (`mcp`, `a2a`, `acp`, `openai`, `workersAi` from `subagents-edge/mcp`, `/a2a`, `/acp`, `/openai`,
 * `/workers-ai`): a Worker that imports none of those entries bundles none of their SDKs (README
 * "Protocols and bundle size").
 */
export { createSubagents } from "./create-subagents";
export * from "./exports";
