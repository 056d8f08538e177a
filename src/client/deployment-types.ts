/**
 * Wire types of what a deployment offers, as a client sees them: its providers (the registry
 * children run on) and its health.
 */

export interface ProviderCapabilities {
  outputSchema: boolean;
  depthLimit: boolean;
  toolFilter: boolean;
  persona: boolean;
}

export interface ProviderInfo {
  name: string;
  kind: "spawn" | "fork" | "remote" | "acp" | "a2a";
  capabilities: ProviderCapabilities;
  inheritsParentContext: boolean;
  continuable: boolean;
  local: boolean;
  /** Where the other side lives: shown to the deployment admin only. */
  url?: string;
  /** The tenants that may use it (`["*"]`: all): shown to the deployment admin only. */
  tenants?: string[];
}

/** `tenants`: who may use the provider, tenant names or `["*"]` (default `["default"]`). */
export type RegisterProviderRequest =
  | { kind: "remote"; url: string; token?: string; tenants?: string[] }
  | { kind: "acp"; url: string; token?: string; tenants?: string[] }
  | { kind: "a2a"; url: string; token?: string; tenants?: string[] }
  | { kind: "spawn"; tenants?: string[] }
  | { kind: "fork"; tenants?: string[] };

export interface ProviderEvent {
  seq: number;
  type: "subagent/provider-added" | "subagent/provider-removed";
  at: number;
  data: { name: string; provider?: ProviderInfo; tenants?: string[] };
}

export interface ProviderEventPage {
  events: ProviderEvent[];
  next: number | null;
}

export interface Health {
  ok: true;
  version: string;
}
