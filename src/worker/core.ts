/**
 * @module `subagents-edge/core`: the runtime inside your own Worker (docs/embedding.md) with only
 * the protocols you give it. `createSubagents` is `subagents-edge/worker`'s, except that it speaks
 * no MCP, A2A or ACP unless `protocols` names them (`mcp` from `subagents-edge/mcp`, `a2a` from
 * `subagents-edge/a2a`, `acp` from `subagents-edge/acp`): a Worker that imports none of those
 * entries bundles none of their SDKs (README "Protocols and bundle size").
 */
export { createSubagents } from "./create-subagents";
export * from "./exports";
