import type { Outcome } from "./errors";
import type { ProviderInfo, ProviderRecord } from "./provider";
import type { DirectoryEntry, RegistryEvent } from "./session-api";

type Answer<T> = T | Promise<T>;

/**
 * The deployment's registry object (its providers and the directory of top-level sessions): what
 * the registry object implements (the compiler checks it); a session object and the Worker reach
 * it through a stub, as `Remote<RegistryRpc>`.
 */
export interface RegistryRpc {
  /** Every provider with its url and tenants: the caller narrows it to what each viewer may see. */
  list(): Answer<ProviderInfo[]>;
  /** The full record, transport credentials included: for the runtime only, never for listings. */
  resolve(name: string): Answer<ProviderRecord | undefined>;
  register(record: ProviderRecord): Answer<Outcome<ProviderInfo>>;
  remove(name: string): Answer<Outcome<{ removed: string }>>;
  /** Records a top-level session in the directory (idempotent). */
  addSession(tenant: string, entry: DirectoryEntry): Answer<void>;
  /** Forgets a deleted top-level session (idempotent). */
  removeSession(id: string): Answer<void>;
  /** Top-level sessions, newest first; `before` is the cursor a previous page returned. */
  sessions(
    tenant: string,
    limit: number,
    before?: { createdAt: number; id: string },
  ): Answer<{ sessions: DirectoryEntry[]; next: string | null }>;
  /** The registry's own log after `after` (`subagent/provider-added` / `-removed`). */
  events(after: number, limit: number): Answer<RegistryEvent[]>;
}
