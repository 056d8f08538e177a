import { compact } from "../core/compact";
import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import {
  ALL_TENANTS,
  type ProviderInfo,
  type ProviderKind,
  type ProviderRecord,
  type SubagentCapabilities,
} from "../contract/provider";
import { DEFAULT_TENANT, TENANT_NAME } from "../contract/session";
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

/**
 * A provider as every caller may see it: name, kind, capabilities and flags. Its `url` and
 * `tenants` are the deployment's business (`adminProviderInfo`).
 */
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
      };
  }
}

/** A provider as the deployment admin sees it: with its address and the tenants it belongs to. */
export function adminProviderInfo(record: ProviderRecord): ProviderInfo {
  return { ...describeProvider(record), ...compact({ url: record.url }), tenants: providerTenants(record) };
}

/** What says whom a provider belongs to (a registry event may not know the kind: then not built in). */
export type ProviderOwnership = Pick<ProviderRecord, "name" | "tenants"> & {
  kind?: ProviderKind | undefined;
};

/**
 * The tenants that may use `record` (`["*"]`: all). The built-in `spawn` and `fork` (that name and
 * that kind, registered without tenants) belong to every tenant; a provider registered again under
 * one of their names after a removal, of another kind or with tenants, is like any other.
 */
export function providerTenants(record: ProviderOwnership): string[] {
  if (record.tenants !== undefined) return record.tenants;
  const builtIn = DEFAULT_PROVIDERS.some((p) => p.name === record.name && p.kind === record.kind);
  return builtIn ? [ALL_TENANTS] : [DEFAULT_TENANT];
}

/** Whether sessions of `tenant` may use `record`. */
export function belongsTo(record: ProviderOwnership, tenant: string): boolean {
  const tenants = providerTenants(record);
  return tenants.includes(ALL_TENANTS) || tenants.includes(tenant);
}

export const DEFAULT_PROVIDERS: readonly ProviderRecord[] = [
  { name: "spawn", kind: "spawn" },
  { name: "fork", kind: "fork" },
];

export const ProviderName = lazySchema(() =>
  z
    .string()
    .regex(/^[a-z][a-z0-9_-]{0,63}$/, "provider names are 1-64 of a-z, 0-9, _ and -, starting with a letter"),
);

/**
 * Who may use a provider: tenant names, or `["*"]` for every tenant (default `["default"]`, the
 * deployment admin's own tenant). Never empty: a provider nobody may use is a mistake.
 */
export const ProviderTenants = lazySchema(() =>
  z
    .array(
      z.union([
        z.literal(ALL_TENANTS),
        z.string().regex(TENANT_NAME, "tenant names are 1-64 of a-z, 0-9 and -"),
      ]),
    )
    .min(1, 'a provider belongs to at least one tenant (or ["*"] for all)')
    .max(64)
    .refine((t) => !t.includes(ALL_TENANTS) || t.length === 1, '"*" stands alone: every tenant')
    .refine((t) => new Set(t).size === t.length, "each tenant once"),
);

export const RegisterProviderBody = lazySchema(() =>
  z.discriminatedUnion("kind", [
    z.strictObject({
      kind: z.literal("remote"),
      url: ServiceUrl,
      token: z.string().min(1).max(4096).optional(),
      tenants: ProviderTenants.optional(),
    }),
    z.strictObject({
      kind: z.literal("acp"),
      url: AcpUrl,
      token: z.string().min(1).max(4096).optional(),
      tenants: ProviderTenants.optional(),
    }),
    z.strictObject({
      kind: z.literal("a2a"),
      /** The agent card's URL, or the agent's base URL (its card at `.well-known/agent-card.json`). */
      url: ServiceUrl,
      token: z.string().min(1).max(4096).optional(),
      tenants: ProviderTenants.optional(),
    }),
    z.strictObject({ kind: z.literal("spawn"), tenants: ProviderTenants.optional() }),
    z.strictObject({ kind: z.literal("fork"), tenants: ProviderTenants.optional() }),
  ]),
);
export type RegisterProviderBody = z.infer<typeof RegisterProviderBody>;
