/** Providers as the wire shows them: a named kind with its capabilities (records keep the token). */

export interface SubagentCapabilities {
  outputSchema: boolean;
  depthLimit: boolean;
  toolFilter: boolean;
  persona: boolean;
}

export interface ProviderInfo {
  name: string;
  kind: ProviderKind;
  capabilities: SubagentCapabilities;
  inheritsParentContext: boolean;
  continuable: boolean;
  local: boolean;
  /** For remote, acp and a2a providers: where the other side lives (never its token). */
  url?: string;
}

export type ProviderKind = "spawn" | "fork" | "remote" | "acp" | "a2a";

export interface ProviderRecord {
  name: string;
  kind: ProviderKind;
  url?: string;
  token?: string;
}
