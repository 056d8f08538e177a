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
  /**
   * For remote, acp and a2a providers: where the other side lives (never its token). Shown to the
   * deployment admin only: a provider's address is the deployment's business.
   */
  url?: string;
  /** The tenants that may use it (`["*"]`: all). Shown to the deployment admin only. */
  tenants?: string[];
}

export type ProviderKind = "spawn" | "fork" | "remote" | "acp" | "a2a";

export interface ProviderRecord {
  name: string;
  kind: ProviderKind;
  url?: string;
  token?: string;
  /**
   * The tenants whose sessions may use it: names, or `["*"]` for all. Absent (a record registered
   * before providers had tenants): `["default"]`, the deployment admin's own tenant.
   */
  tenants?: string[];
}

/** What a session may use: its tenant and its `providers` option (absent: every provider). */
export interface ProviderScope {
  tenant: string;
  allowed?: readonly string[] | undefined;
}

/** `tenants: ["*"]`: a provider every tenant may use. */
export const ALL_TENANTS = "*";
