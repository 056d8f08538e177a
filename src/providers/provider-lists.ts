import type { ProviderInfo } from "../contract/provider";

/** How long a provider list behind the `subagent` tools may be reused (starts always re-check). */
export const PROVIDER_LIST_TTL_MS = 2_000;

interface Entry {
  at: number;
  list?: ProviderInfo[];
  pending?: Promise<ProviderInfo[]>;
}

/**
 * The provider lists behind the model's `subagent` tools, shared by every session object of this
 * isolate and keyed by registry: a fan-out's hundred new children ask the registry once, not a
 * hundred times. A list is reused for at most PROVIDER_LIST_TTL_MS (the contract a per-object
 * cache had), concurrent first reads wait for one answer, and a change made through this isolate
 * (`forget`) is seen at once. Starts never rely on it: they look the provider up themselves.
 */
const lists = new Map<string, Entry>();

/** The list for `registry`: a fresh one from memory, else `read()` (the last known list if it fails). */
export async function providerList(
  registry: string,
  read: () => Promise<ProviderInfo[]>,
  fallback: () => ProviderInfo[],
): Promise<ProviderInfo[]> {
  const entry: Entry = lists.get(registry) ?? { at: 0 };
  lists.set(registry, entry);
  if (entry.list && Date.now() - entry.at < PROVIDER_LIST_TTL_MS) return entry.list;
  if (!entry.pending) {
    const asked = Date.now();
    entry.pending = read()
      .then((list) => {
        entry.at = asked;
        entry.list = list;
        return list;
      })
      .finally(() => {
        delete entry.pending;
      });
  }
  try {
    return await entry.pending;
  } catch {
    // the registry is unreachable: the last known tools; a start re-checks the registry
    return entry.list ?? fallback();
  }
}

/** A provider was added or removed through this isolate: its lists are read again. */
export function forgetProviderLists(): void {
  lists.clear();
}
