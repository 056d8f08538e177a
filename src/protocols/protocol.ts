/**
 * A protocol the runtime can speak beside its HTTP API, handed to `createSubagents` as one of its
 * `protocols`: `mcp` (subagents-edge/mcp), `a2a` (subagents-edge/a2a), `acp` (subagents-edge/acp),
 * and the model APIs of the built-in routes, `openai` (subagents-edge/openai: `openai:<model>`)
 * and `workersAi` (subagents-edge/workers-ai: `workers-ai:<model>`). Each is a small object whose
 * protocol code (the official SDK) loads on first use; a Worker that imports none of them bundles
 * none of that code (README "Protocols and bundle size").
 */
export interface Protocol {
  /** Which protocol: one of each at most per deployment. */
  readonly protocol: ProtocolName;
}

export type ProtocolName = "mcp" | "a2a" | "acp" | "openai" | "workers-ai";

/** What each protocol is, in a sentence, and the name its entry exports it under. */
const PROTOCOLS: Record<ProtocolName, { what: string; export: string }> = {
  mcp: { what: "MCP", export: "mcp" },
  a2a: { what: "A2A", export: "a2a" },
  acp: { what: "ACP", export: "acp" },
  openai: { what: "the OpenAI-compatible API of openai: routes", export: "openai" },
  "workers-ai": { what: "Workers AI, the API of workers-ai: routes", export: "workersAi" },
};

/** Why a deployment cannot use `protocol`: the sentence its refusals and errors say. */
export function protocolMissing(protocol: ProtocolName): string {
  const { what, export: name } = PROTOCOLS[protocol];
  return (
    `this deployment does not speak ${what}: its Worker made the runtime without the ${protocol} protocol ` +
    `(createSubagents({ protocols: [${name}] }) with ${name} from subagents-edge/${protocol}, or subagents-edge/worker, which has every protocol)`
  );
}
