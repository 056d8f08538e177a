import { quote } from "../../src/core/quote";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import {
  adminProviderInfo,
  DEFAULT_PROVIDERS,
  type ProviderInfo,
  type ProviderRecord,
} from "../../src/providers/catalog";
import type { DirectoryEntry, RegistryEvent } from "../../src/contract/session-api";
import type { RegistryRpc } from "../../src/contract/registry-api";
import type { ObjectHost } from "../host/port";
import { faultPoint, faultsArmed, REGISTRY_FAULT_SCOPE } from "../../src/core/faults";
import { RegistryStore } from "../store/registry-store";

/**
 * The provider registry: one object for the whole deployment, so every isolate agrees on which
 * names exist. Names keep registration order; `spawn` and `fork` are registered first. Adding
 * and removing append `subagent/provider-added` / `-removed` to the registry's own log.
 * Removal blocks new starts only: runs already returned are never revoked. Its tables and every
 * statement on them are the store's (store/registry-store.ts). It needs of its host (host/port.ts)
 * only storage; on Workers, the Durable Object class a Worker exports forwards every call here
 * (src/worker/object-shells.ts).
 */
export class RegistryObject implements RegistryRpc {
  readonly #store: RegistryStore;

  constructor(host: Pick<ObjectHost, "storage">) {
    this.#store = new RegistryStore(host.storage, DEFAULT_PROVIDERS);
  }

  /** Every provider with its url and tenants: the Worker narrows it to what each caller may see. */
  async list(): Promise<ProviderInfo[]> {
    await this.#fault();
    return this.#store.providers().map(adminProviderInfo);
  }

  /** The full record, transport credentials included: for the runtime only, never for listings. */
  async resolve(name: string): Promise<ProviderRecord | undefined> {
    await this.#fault();
    return this.#store.providers().find((r) => r.name === name);
  }

  async register(record: ProviderRecord): Promise<Outcome<ProviderInfo>> {
    await this.#fault();
    if (this.#store.providers().some((r) => r.name === record.name))
      return fail("DUPLICATE_PROVIDER", `provider ${record.name} is already registered`);
    this.#store.addProvider(record);
    return ok(adminProviderInfo(record));
  }

  async remove(name: string): Promise<Outcome<{ removed: string }>> {
    await this.#fault();
    return this.#store.removeProvider(name)
      ? ok({ removed: name })
      : fail("NO_PROVIDER", `no provider named ${quote(name)}`);
  }

  /** Records a top-level session in the directory (idempotent). */
  async addSession(tenant: string, entry: DirectoryEntry): Promise<void> {
    await this.#fault();
    this.#store.addSession(tenant, entry);
  }

  /** Forgets a deleted top-level session (idempotent). */
  async removeSession(id: string): Promise<void> {
    await this.#fault();
    this.#store.removeSession(id);
  }

  /** Top-level sessions, newest first; `before` is the cursor a previous page returned. */
  sessions(
    tenant: string,
    limit: number,
    before?: { createdAt: number; id: string },
  ): { sessions: DirectoryEntry[]; next: string | null } {
    return this.#store.sessions(tenant, limit, before);
  }

  events(after: number, limit: number): RegistryEvent[] {
    return this.#store.events(after, limit);
  }

  /** The registry's fault point, on every call that reads or writes it (nothing unless a test armed it). */
  async #fault(): Promise<void> {
    if (faultsArmed()) await faultPoint(REGISTRY_FAULT_SCOPE, "in-registry");
  }
}
