import { quote } from "../../src/core/quote";
import { DurableObject } from "cloudflare:workers";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import {
  adminProviderInfo,
  DEFAULT_PROVIDERS,
  type ProviderInfo,
  type ProviderRecord,
  providerTenants,
} from "../../src/providers/catalog";
import type { DirectoryEntry, RegistryEvent } from "../../src/contract/session-api";
import type { Jurisdiction, LocationHint } from "../../src/core/placement";
import { faultPoint, faultsArmed, REGISTRY_FAULT_SCOPE } from "../../src/core/faults";
import { ReadMemo } from "../store/read-memo";
import { migrate } from "../store/schema";

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
 * The provider registry: one object for the whole deployment, so every isolate agrees on which
 * names exist. Names keep registration order; `spawn` and `fork` are registered first. Adding
 * and removing append `subagent/provider-added` / `-removed` to the registry's own log.
 * Removal blocks new starts only: runs already returned are never revoked.
 */
export class RegistryObject extends DurableObject<Env> {
  /** Reads of the providers table, until its next write (read-memo.ts). */
  readonly #providers = new ReadMemo();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, REGISTRY_MIGRATIONS);
    const { sql } = ctx.storage;
    if (sql.exec("SELECT count(*) AS n FROM events").one().n === 0) {
      ctx.storage.transactionSync(() => {
        for (const record of DEFAULT_PROVIDERS) this.#insert(record);
      });
    }
  }

  /** Every provider with its url and tenants: the Worker narrows it to what each caller may see. */
  async list(): Promise<ProviderInfo[]> {
    await this.#fault();
    return this.#records().map(adminProviderInfo);
  }

  /** The full record, transport credentials included: for the runtime only, never for listings. */
  async resolve(name: string): Promise<ProviderRecord | undefined> {
    await this.#fault();
    return this.#records().find((r) => r.name === name);
  }

  async register(record: ProviderRecord): Promise<Outcome<ProviderInfo>> {
    await this.#fault();
    if (this.#records().some((r) => r.name === record.name))
      return fail("DUPLICATE_PROVIDER", `provider ${record.name} is already registered`);
    this.ctx.storage.transactionSync(() => this.#insert(record));
    return ok(adminProviderInfo(record));
  }

  async remove(name: string): Promise<Outcome<{ removed: string }>> {
    await this.#fault();
    const { sql } = this.ctx.storage;
    this.#providers.changed();
    const removed = this.ctx.storage.transactionSync(() => {
      const gone = sql
        .exec<{ record: string }>("DELETE FROM providers WHERE name = ? RETURNING record", name)
        .toArray()[0];
      if (gone) {
        const record = JSON.parse(gone.record) as ProviderRecord;
        // the tenants say who may see the removal in the registry's log
        this.#append("subagent/provider-removed", { name, tenants: providerTenants(record) });
      }
      return gone !== undefined;
    });
    return removed ? ok({ removed: name }) : fail("NO_PROVIDER", `no provider named ${quote(name)}`);
  }

  /** Records a top-level session in the directory (idempotent). */
  async addSession(tenant: string, entry: DirectoryEntry): Promise<void> {
    await this.#fault();
    this.ctx.storage.sql.exec(
      "INSERT INTO sessions (id, created_at, label, tenant, jurisdiction, location_hint) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
      entry.id,
      entry.createdAt,
      entry.label ?? null,
      tenant,
      entry.jurisdiction ?? null,
      entry.locationHint ?? null,
    );
  }

  /** Top-level sessions, newest first; `before` is the cursor a previous page returned. */
  sessions(
    tenant: string,
    limit: number,
    before?: { createdAt: number; id: string },
  ): { sessions: DirectoryEntry[]; next: string | null } {
    const columns = "id, created_at, label, jurisdiction, location_hint";
    const rows = this.ctx.storage.sql
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

  events(after: number, limit: number): RegistryEvent[] {
    return this.ctx.storage.sql
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

  /** The registry's fault point, on every call that reads or writes it (nothing unless a test armed it). */
  async #fault(): Promise<void> {
    if (faultsArmed()) await faultPoint(REGISTRY_FAULT_SCOPE, "in-registry");
  }

  /** Every start resolves its provider here: the records are read once per write, not per start. */
  #records(): readonly ProviderRecord[] {
    return this.#providers.read(
      "records",
      () =>
        this.ctx.storage.sql
          .exec<{ record: string }>("SELECT record FROM providers ORDER BY position")
          .toArray()
          .map((r) => JSON.parse(r.record) as ProviderRecord),
      [],
    );
  }

  #insert(record: ProviderRecord): void {
    this.#providers.changed();
    const { sql } = this.ctx.storage;
    const position = sql
      .exec<{ p: number }>("SELECT coalesce(max(position), 0) + 1 AS p FROM providers")
      .one().p;
    sql.exec(
      "INSERT INTO providers (name, position, record) VALUES (?, ?, ?)",
      record.name,
      position,
      JSON.stringify(record),
    );
    this.#append("subagent/provider-added", { name: record.name, provider: adminProviderInfo(record) });
  }

  #append(type: RegistryEvent["type"], data: RegistryEvent["data"]): void {
    const { sql } = this.ctx.storage;
    const seq = sql.exec<{ s: number }>("SELECT coalesce(max(seq), -1) + 1 AS s FROM events").one().s;
    sql.exec(
      "INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)",
      seq,
      type,
      Date.now(),
      JSON.stringify(data),
    );
  }
}
