import { describe, expect, it } from "vitest";
import type { ProviderInfo } from "../../../src/contract/provider";
import type { RegistryEvent } from "../../../src/contract/session-api";
import { adminProviderInfo } from "../../../src/providers/catalog";
import { mayUse, providersFor, registryEventsFor } from "../../../src/providers/provider-access";

const remote = (name: string, tenants?: string[]): ProviderInfo =>
  adminProviderInfo({
    name,
    kind: "remote",
    url: `https://${name}.example.com`,
    ...(tenants ? { tenants } : {}),
  });

describe("which providers a caller sees and a session may use", () => {
  it("gives the built-in providers to every tenant and a registered one to its tenants only (default: the deployment's own)", () => {
    for (const tenant of ["default", "acme"]) {
      expect(mayUse({ name: "spawn", kind: "spawn" }, { tenant })).toBe(true);
      expect(mayUse({ name: "fork", kind: "fork" }, { tenant })).toBe(true);
    }
    // a built-in name registered again (after a removal) is the deployment's like any other:
    // another kind under it, or the same kind with tenants, does not reach every tenant
    expect(mayUse({ name: "spawn", kind: "acp" }, { tenant: "acme" })).toBe(false);
    expect(mayUse({ name: "spawn", kind: "acp" }, { tenant: "default" })).toBe(true);
    expect(mayUse({ name: "fork", kind: "fork", tenants: ["other"] }, { tenant: "acme" })).toBe(false);
    expect(mayUse({ name: "fork", kind: "fork", tenants: ["other"] }, { tenant: "other" })).toBe(true);
    expect(mayUse({ name: "b" }, { tenant: "default" })).toBe(true);
    expect(mayUse({ name: "b" }, { tenant: "acme" })).toBe(false);
    expect(mayUse({ name: "b", tenants: ["acme", "zeta"] }, { tenant: "acme" })).toBe(true);
    expect(mayUse({ name: "b", tenants: ["acme"] }, { tenant: "default" })).toBe(false);
    expect(mayUse({ name: "b", tenants: ["*"] }, { tenant: "anyone" })).toBe(true);
  });

  it("narrows to a session's providers list on top of its tenant, built-in providers included", () => {
    const scope = { tenant: "acme", allowed: ["spawn", "b"] };
    expect(mayUse({ name: "spawn", kind: "spawn" }, scope)).toBe(true);
    expect(mayUse({ name: "fork", kind: "fork" }, scope)).toBe(false);
    expect(mayUse({ name: "b", tenants: ["acme"] }, scope)).toBe(true);
    expect(mayUse({ name: "b" }, scope)).toBe(false); // listed, but not its tenant's
  });

  it("lists addresses and tenants to the deployment admin only", () => {
    const listing = [adminProviderInfo({ name: "spawn", kind: "spawn" }), remote("b", ["*"]), remote("c")];
    expect(providersFor(listing, { kind: "deployment" })).toEqual(listing);
    const seen = providersFor(listing, { kind: "scoped", tenant: "acme" });
    expect(seen.map((p) => p.name)).toEqual(["spawn", "b"]);
    for (const p of seen) expect(Object.keys(p).filter((k) => k === "url" || k === "tenants")).toEqual([]);
    expect(JSON.stringify(seen)).not.toMatch(/example\.com|tenants/);
  });

  it("shows a viewer only the registry events of providers it may use, without addresses; an event from before tenants is the deployment's", () => {
    const events: RegistryEvent[] = [
      {
        seq: 0,
        type: "subagent/provider-added",
        at: 1,
        data: { name: "b", provider: remote("b", ["acme"]) },
      },
      { seq: 1, type: "subagent/provider-added", at: 2, data: { name: "c", provider: remote("c") } },
      { seq: 2, type: "subagent/provider-removed", at: 3, data: { name: "b", tenants: ["acme"] } },
      { seq: 3, type: "subagent/provider-removed", at: 4, data: { name: "old" } },
    ];
    const acme = registryEventsFor(events, { kind: "scoped", tenant: "acme" });
    expect(acme.map((e) => e.seq)).toEqual([0, 2]);
    expect(acme[1]!.data).toEqual({ name: "b" });
    expect(JSON.stringify(acme)).not.toMatch(/example\.com|tenants/);
    expect(registryEventsFor(events, { kind: "scoped", tenant: "default" }).map((e) => e.seq)).toEqual([
      1, 3,
    ]);
    expect(registryEventsFor(events, { kind: "deployment" })).toEqual(events);
  });
});
