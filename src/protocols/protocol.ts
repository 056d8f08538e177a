/**
 * A protocol the runtime can speak beside its HTTP API, handed to `createSubagents` as one of its
 * `protocols`: `mcp` (subagents-edge/mcp), `a2a` (subagents-edge/a2a), `acp` (subagents-edge/acp).
 * Each is a small object whose protocol code (the official SDK) loads on first use; a Worker that
 * imports none of them bundles none of that code (README "Protocols and bundle size").
 */
export interface Protocol {
  /** Which protocol: one of each at most per deployment. */
  readonly protocol: ProtocolName;
}

export type ProtocolName = "mcp" | "a2a" | "acp";
