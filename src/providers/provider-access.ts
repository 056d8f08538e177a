import type { ProviderInfo, ProviderScope } from "../contract/provider";
import { type SessionHeader, tenantOf } from "../contract/session";
import type { RegistryEvent } from "../contract/session-api";
import { belongsTo, type ProviderOwnership } from "./catalog";

/**
 * Which providers a caller may see and a session may start children through (README, Security and limits
 * "Providers and tenants"). A provider belongs to the tenants it was registered for; a session
 * may use it when it belongs to the session's tenant and, if the session has a `providers` list,
 * when that list names it. Anything else is answered exactly as an unknown name.
 */

/**
 * Who reads the registry: the deployment admin sees every provider with its `url` and `tenants`;
 * a tenant's admin or a session sees what its scope may use, by name, kind and capabilities only.
 */
export type ProviderViewer = { kind: "deployment" } | ({ kind: "scoped" } & ProviderScope);

export function scopeOf(header: SessionHeader): ProviderScope {
  return { tenant: tenantOf(header), allowed: header.options.providers };
}

/** Whether a session with `scope` may start a child through `provider`. */
export function mayUse(provider: ProviderOwnership, scope: ProviderScope): boolean {
  return (
    belongsTo(provider, scope.tenant) &&
    (scope.allowed === undefined || scope.allowed.includes(provider.name))
  );
}

/** The registry's listing (as the deployment admin sees it) as `viewer` may see it. */
export function providersFor(listing: readonly ProviderInfo[], viewer: ProviderViewer): ProviderInfo[] {
  if (viewer.kind === "deployment") return [...listing];
  return listing.filter((p) => mayUse(p, viewer)).map(withoutDeploymentFields);
}

/**
 * The registry's log as `viewer` may see it: events about providers it may not use are left out
 * and no event shows an address or a tenant list. An event recorded before providers had tenants
 * belongs to the deployment admin's tenant, as its provider does.
 */
export function registryEventsFor(events: readonly RegistryEvent[], viewer: ProviderViewer): RegistryEvent[] {
  if (viewer.kind === "deployment") return [...events];
  const seen: RegistryEvent[] = [];
  for (const event of events) {
    const tenants = event.data.provider?.tenants ?? event.data.tenants;
    const kind = event.data.provider?.kind;
    if (!mayUse({ name: event.data.name, ...(tenants ? { tenants } : {}), kind }, viewer)) continue;
    const { provider } = event.data;
    seen.push({
      ...event,
      data: provider
        ? { name: event.data.name, provider: withoutDeploymentFields(provider) }
        : { name: event.data.name },
    });
  }
  return seen;
}

function withoutDeploymentFields(info: ProviderInfo): ProviderInfo {
  const { url: _url, tenants: _tenants, ...shown } = info;
  return shown;
}
