import { compact } from "../core/compact";
import { z } from "zod";
import type { ProviderInfo, ProviderKind, ProviderRecord, SubagentCapabilities } from "../contract/provider";
import { ServiceUrl } from "../contract/wire";
import { AcpUrl } from "./acp-protocol";

/**
 * What each provider kind offers. `spawn` and `fork` create child sessions in this deployment;
 * `remote` hands work to another deployment of this runtime (out-of-process semantics: no
 * start-time capabilities, `local: false`); `acp` hands a one-shot run to an external Agent Client
 * Protocol server over a WebSocket; `a2a` hands it to any Agent2Agent agent (both with the same
 * out-of-process semantics).
 */

export type { ProviderInfo, ProviderKind, ProviderRecord, SubagentCapabilities };

const ALL: SubagentCapabilities = { outputSchema: true, depthLimit: true, toolFilter: true, persona: true };
const NONE: SubagentCapabilities = {
  outputSchema: false,
  depthLimit: false,
  toolFilter: false,
  persona: false,
};

export function describeProvider(record: ProviderRecord): ProviderInfo {
  switch (record.kind) {
    case "spawn":
      return {
        name: record.name,
        kind: "spawn",
        capabilities: ALL,
        inheritsParentContext: false,
        continuable: true,
        local: true,
      };
    case "fork":
      return {
        name: record.name,
        kind: "fork",
        capabilities: ALL,
        inheritsParentContext: true,
        continuable: true,
        local: true,
      };
    case "remote":
    case "acp":
    case "a2a":
      return {
        name: record.name,
        kind: record.kind,
        capabilities: NONE,
        inheritsParentContext: false,
        continuable: false,
        local: false,
        ...compact({ url: record.url }),
      };
  }
}

export const DEFAULT_PROVIDERS: readonly ProviderRecord[] = [
  { name: "spawn", kind: "spawn" },
  { name: "fork", kind: "fork" },
];

export const ProviderName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, "provider names are 1-64 of a-z, 0-9, _ and -, starting with a letter");

export const RegisterProviderBody = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("remote"),
    url: ServiceUrl,
    token: z.string().min(1).max(4096).optional(),
  }),
  z.strictObject({
    kind: z.literal("acp"),
    url: AcpUrl,
    token: z.string().min(1).max(4096).optional(),
  }),
  z.strictObject({
    kind: z.literal("a2a"),
    /** The agent card's URL, or the agent's base URL (its card at `.well-known/agent-card.json`). */
    url: ServiceUrl,
    token: z.string().min(1).max(4096).optional(),
  }),
  z.strictObject({ kind: z.literal("spawn") }),
  z.strictObject({ kind: z.literal("fork") }),
]);
export type RegisterProviderBody = z.infer<typeof RegisterProviderBody>;
