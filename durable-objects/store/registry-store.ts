import type { HostSql, HostStorage } from "../host/port";
import type { DirectoryEntry, RegistryEvent } from "../../src/contract/session-api";
import type { Jurisdiction, LocationHint } from "../../src/core/placement";
import { adminProviderInfo, type ProviderRecord, providerTenants } from "../../src/providers/catalog";
import { ReadMemo } from "./read-memo";
import { migrate } from "./schema";

const REGISTRY_MIGRATIONS: readonly string[] = [
  `CREATE TABLE providers (
     name TEXT PRIMARY KEY,
     position INTEGER NOT NULL UNIQUE,
     record TEXT NOT NULL
   ) STRICT;
   CREATE TABLE events (
     seq INTEGER PRIMARY KEY,
     type TEXT NOT NULL,
     at INTEGER NOT NULL,
     data TEXT NOT NULL
   ) STRICT;`,
  // 2: the directory of top-level sessions (children are found through their parents)
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     created_at INTEGER NOT NULL,
     label TEXT
   ) STRICT;
   CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC);`,
  // 3: tenancy: each directory entry belongs to one tenant
  `ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
   CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at DESC, id DESC);`,
  // 4: placement: the jurisdiction and location hint a top-level session was created with
  `ALTER TABLE sessions ADD COLUMN jurisdiction TEXT;
   ALTER TABLE sessions ADD COLUMN location_hint TEXT;`,
];

/**
 * The registry object's SQLite (registry-object.ts): its schema and every statement on it. Three
 * tables: `providers` (in registration order), `events` (the registry's own log, `seq` contiguous
 * from 0, appended in the transaction of the change it records) and `sessions` (the directory of
 * top-level sessions, per tenant).
 */
export class RegistryStore {
  readonly #storage: HostStorage;
  readonly #sql: HostSql;
  /** Reads of the providers table, until its next write (read-memo.ts). */
  readonly #providers = new ReadMemo();

  /** Migrates the schema; a registry whose log is empty (a new one) starts with `defaults`, in one transaction. */
  constructor(storage: HostStorage, defaults: readonly ProviderRecord[]) {
    this.#storage = storage;
    this.#sql = storage.sql;
    migrate(storage, REGISTRY_MIGRATIONS);
    if (this.#sql.exec("SELECT count(*) AS n FROM events").one().n === 0) {
      storage.transactionSync(() => {
        for (const record of defaults) this.#insert(record);
      });
    }
  }

  /** Every provider record, in registration order: read once per write, not per start. */
  providers(): readonly ProviderRecord[] {
    return this.#providers.read(
      "records",
      () =>
        this.#sql
          .exec<{ record: string }>("SELECT record FROM providers ORDER BY position")
          .toArray()
          .map((r) => JSON.parse(r.record) as ProviderRecord),
      [],
    );
  }

  /** Registers `record` last and logs `subagent/provider-added`, in one transaction (the caller checked the name is free). */
  addProvider(record: ProviderRecord): void {
    this.#storage.transactionSync(() => this.#insert(record));
  }

  /** Removes the provider named `name` and logs `subagent/provider-removed`, in one transaction; false if there was none. */
  removeProvider(name: string): boolean {
    this.#providers.changed();
    return this.#storage.transactionSync(() => {
      const gone = this.#sql
        .exec<{ record: string }>("DELETE FROM providers WHERE name = ? RETURNING record", name)
        .toArray()[0];
      if (gone) {
        const record = JSON.parse(gone.record) as ProviderRecord;
        // the tenants say who may see the removal in the registry's log
        this.#append("subagent/provider-removed", { name, tenants: providerTenants(record) });
      }
      return gone !== undefined;
    });
  }

  /** Records a top-level session in `tenant`'s directory (idempotent: a known id is kept as it was). */
  addSession(tenant: string, entry: DirectoryEntry): void {
    this.#sql.exec(
      "INSERT INTO sessions (id, created_at, label, tenant, jurisdiction, location_hint) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
      entry.id,
      entry.createdAt,
      entry.label ?? null,
      tenant,
      entry.jurisdiction ?? null,
      entry.locationHint ?? null,
    );
  }

  /** Forgets a deleted top-level session (idempotent). */
  removeSession(id: string): void {
    this.#sql.exec("DELETE FROM sessions WHERE id = ?", id);
  }

  /** `tenant`'s top-level sessions, newest first; `before` is the cursor a previous page returned. */
  sessions(
    tenant: string,
    limit: number,
    before?: { createdAt: number; id: string },
  ): { sessions: DirectoryEntry[]; next: string | null } {
    const columns = "id, created_at, label, jurisdiction, location_hint";
    const rows = this.#sql
      .exec<{
        id: string;
        created_at: number;
        label: string | null;
        jurisdiction: string | null;
        location_hint: string | null;
      }>(
        before
          ? `SELECT ${columns} FROM sessions WHERE tenant = ? AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?`
          : `SELECT ${columns} FROM sessions WHERE tenant = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
        ...(before ? [tenant, before.createdAt, before.id, limit + 1] : [tenant, limit + 1]),
      )
      .toArray();
    const page = rows.slice(0, limit).map(
      (r): DirectoryEntry => ({
        id: r.id,
        createdAt: r.created_at,
        ...(r.label === null ? {} : { label: r.label }),
        ...(r.jurisdiction === null ? {} : { jurisdiction: r.jurisdiction as Jurisdiction }),
        ...(r.location_hint === null ? {} : { locationHint: r.location_hint as LocationHint }),
      }),
    );
    const last = page.at(-1);
    return { sessions: page, next: rows.length > limit && last ? `${last.createdAt}.${last.id}` : null };
  }

  /** The log's events after `after`, oldest first, at most `limit`. */
  events(after: number, limit: number): RegistryEvent[] {
    return this.#sql
      .exec<{ seq: number; type: string; at: number; data: string }>(
        "SELECT seq, type, at, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        after,
        limit,
      )
      .toArray()
      .map((r) => ({
        seq: r.seq,
        type: r.type as RegistryEvent["type"],
        at: r.at,
        data: JSON.parse(r.data),
      }));
  }

  #insert(record: ProviderRecord): void {
    this.#providers.changed();
    const position = this.#sql
      .exec<{ p: number }>("SELECT coalesce(max(position), 0) + 1 AS p FROM providers")
      .one().p;
    this.#sql.exec(
      "INSERT INTO providers (name, position, record) VALUES (?, ?, ?)",
      record.name,
      position,
      JSON.stringify(record),
    );
    this.#append("subagent/provider-added", { name: record.name, provider: adminProviderInfo(record) });
  }

  #append(type: RegistryEvent["type"], data: RegistryEvent["data"]): void {
    const seq = this.#sql.exec<{ s: number }>("SELECT coalesce(max(seq), -1) + 1 AS s FROM events").one().s;
    this.#sql.exec(
      "INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)",
      seq,
      type,
      Date.now(),
      JSON.stringify(data),
    );
  }
}
