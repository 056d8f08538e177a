import { lazy } from "../../src/contract/lazy";
/**
 * Ordered, additive migrations of a session's SQLite database, run synchronously and gated by a
 * version row in `meta` (Durable Objects have no `PRAGMA user_version`); a step may also move rows
 * out of `flags` into a table it adds (FLAG_MOVES). The pending steps run in one transaction with
 * the version bump, so a crash never leaves a half-migrated schema.
 */

export const SESSION_MIGRATIONS: readonly string[] = [
  // 1: the foundation: header, log, inbox, loop state
  `CREATE TABLE header (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     body TEXT NOT NULL
   ) STRICT;
   CREATE TABLE events (
     seq INTEGER PRIMARY KEY,
     type TEXT NOT NULL,
     at INTEGER NOT NULL,
     data TEXT NOT NULL
   ) STRICT;
   CREATE INDEX events_by_type ON events (type, seq);
   CREATE TABLE inbox (
     message_id TEXT PRIMARY KEY,
     position INTEGER NOT NULL UNIQUE,
     lane TEXT NOT NULL CHECK (lane IN ('next-turn', 'next-step')),
     waking INTEGER NOT NULL,
     source TEXT NOT NULL,
     content TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('pending', 'claimed', 'discarded')),
     idempotency_key TEXT UNIQUE,
     content_hash TEXT NOT NULL
   ) STRICT;
   CREATE INDEX inbox_pending ON inbox (state, position);
   CREATE TABLE loop (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     body TEXT NOT NULL
   ) STRICT;`,
  // 2: delegation: runs this session awaits, children it owns, its outbox and de-duplication
  `CREATE TABLE runs (
     run_id TEXT PRIMARY KEY,
     child_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     local INTEGER NOT NULL,
     call_key TEXT UNIQUE,
     task_id TEXT UNIQUE,
     tool_name TEXT,
     state TEXT NOT NULL CHECK (state IN ('starting', 'running', 'settled')),
     spec TEXT NOT NULL,
     result TEXT,
     cancel_requested INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   ) STRICT;
   CREATE TABLE children (
     child_id TEXT PRIMARY KEY,
     provider TEXT NOT NULL,
     mode TEXT NOT NULL,
     label TEXT,
     created_at INTEGER NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('owned', 'released'))
   ) STRICT;
   CREATE TABLE outbox (
     id TEXT PRIMARY KEY,
     position INTEGER NOT NULL UNIQUE,
     target TEXT NOT NULL,
     kind TEXT NOT NULL,
     payload TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     next_at INTEGER NOT NULL,
     delivered_at INTEGER,
     dead_at INTEGER,
     last_error TEXT
   ) STRICT;
   CREATE INDEX outbox_undelivered ON outbox (delivered_at, dead_at, position);
   CREATE TABLE seen (
     envelope_id TEXT PRIMARY KEY,
     at INTEGER NOT NULL
   ) STRICT;`,
  // 3: continuable children: the activation (at most one row), epochs seen by a parent, flags
  `CREATE TABLE activation (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     epoch INTEGER NOT NULL,
     run_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     started_seq INTEGER NOT NULL
   ) STRICT;
   CREATE TABLE epochs (
     run_id TEXT PRIMARY KEY,
     child_id TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('starting', 'published', 'ended')),
     pending_notice TEXT
   ) STRICT;
   CREATE TABLE flags (
     name TEXT PRIMARY KEY,
     value TEXT NOT NULL
   ) STRICT;
   ALTER TABLE children ADD COLUMN epoch_run_id TEXT;`,
  // 4: receiver-side per-link order of outbox envelopes
  `CREATE TABLE links (
     sender TEXT PRIMARY KEY,
     next_seq INTEGER NOT NULL
   ) STRICT;`,
  // 5: remote delegation: the transport state of runs handed to another deployment (one row per
  // remote run, beside its row in runs). token and secret are credentials: never copied elsewhere.
  `CREATE TABLE remote_runs (
     run_id TEXT PRIMARY KEY,
     url TEXT NOT NULL,
     token TEXT,
     secret TEXT NOT NULL,
     request TEXT NOT NULL,
     remote_id TEXT,
     phase TEXT NOT NULL CHECK (phase IN ('create', 'prompt', 'await', 'interrupt', 'done')),
     cursor INTEGER NOT NULL DEFAULT -1,
     output TEXT,
     polls INTEGER NOT NULL DEFAULT 0,
     attempts INTEGER NOT NULL DEFAULT 0,
     next_at INTEGER NOT NULL,
     contact_at INTEGER NOT NULL,
     last_error TEXT
   ) STRICT;
   CREATE INDEX remote_runs_due ON remote_runs (phase, next_at);`,
  // 6: the drive loop asks for reserved-but-unpublished runs on every pass
  `CREATE INDEX runs_by_state ON runs (state);`,
  // 7: a retried start with a caller-reserved child id re-attaches: the request it was made with,
  // and how long an attempt that failed ambiguously is held for such a retry
  `ALTER TABLE runs ADD COLUMN request_key TEXT;
   ALTER TABLE runs ADD COLUMN held_until INTEGER;
   CREATE INDEX runs_by_child ON runs (child_id);`,
  // 8: an outbox row the sender withdrew before sending it (its target was never created) is told
  // apart from a delivered one, so later envelopes on that link can say the position never comes
  `ALTER TABLE outbox ADD COLUMN withdrawn INTEGER NOT NULL DEFAULT 0;`,
  // 9: a far-side run is on another deployment (remote) or on an A2A agent (a2a); each transport
  // moves only its own rows
  `ALTER TABLE remote_runs ADD COLUMN protocol TEXT NOT NULL DEFAULT 'remote' CHECK (protocol IN ('remote', 'a2a'));`,
  // 10: an ACP run reconnects after its object restarted (session/load): where the agent is, its
  // token (a credential: never copied elsewhere), its session, and the bounded resume count
  `CREATE TABLE acp_runs (
     run_id TEXT PRIMARY KEY,
     url TEXT NOT NULL,
     token TEXT,
     session_id TEXT,
     can_load INTEGER NOT NULL DEFAULT 0,
     resumes INTEGER NOT NULL DEFAULT 0
   ) STRICT;`,
  // 11: outbox sends are counted before they go out, so a restart during a send is a failed attempt
  `ALTER TABLE outbox ADD COLUMN sends INTEGER NOT NULL DEFAULT 0;`,
  // 12: the drive loop's polls of a parent with a long history read only the rows they ask
  // about: the held starts (a few, ever) and the runs on other deployments
  `CREATE INDEX runs_held ON runs (held_until) WHERE held_until IS NOT NULL;
   CREATE INDEX runs_remote ON runs (state) WHERE local = 0;`,
  // 13: an envelope's per-link sequence counts the rows of its link, not the whole outbox
  `CREATE INDEX outbox_by_target ON outbox (target);`,
  // 14: facts about one child or run get tables of their own instead of prefixed names in
  // `flags` (FLAG_MOVES moves an older object's rows): what makes a continuable start idempotent
  // (the tool call that made it and the child's message id; a caller-reserved id's request and
  // first epoch), the places a tree's root gave to sessions below its children, and the cancels
  // that outran their one-shot child's creation (from its parent)
  `CREATE TABLE continuable_starts (
     child_id TEXT PRIMARY KEY,
     call_key TEXT UNIQUE,
     message_id TEXT,
     request_key TEXT,
     run_id TEXT
   ) STRICT;
   CREATE TABLE tree_slots (child_id TEXT PRIMARY KEY) STRICT;
   CREATE TABLE cancelled_runs (run_id TEXT PRIMARY KEY, parent TEXT NOT NULL) STRICT;`,
  // 15: approvals (README "Approvals"): the ones this session asked for (with the call they hold,
  // its deadline and how many runs an approved call began) and those its descendants asked for,
  // as their envelopes told it
  `CREATE TABLE approvals (
     approval_id TEXT PRIMARY KEY,
     session_id TEXT NOT NULL,
     tool_call_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     args TEXT NOT NULL,
     requested_at INTEGER NOT NULL,
     call_key TEXT UNIQUE,
     turn INTEGER,
     expires_at INTEGER,
     decision TEXT CHECK (decision IN ('approve', 'deny')),
     reason TEXT,
     decided_by TEXT,
     runs INTEGER NOT NULL DEFAULT 0
   ) STRICT;
   CREATE INDEX approvals_pending ON approvals (requested_at) WHERE decision IS NULL;`,
  // 16: control over time (README "Steering, deadlines and schedules"): messages delivered later
  // or on a cron schedule, and a one-shot run's deadline
  `CREATE TABLE schedules (
     schedule_id TEXT PRIMARY KEY,
     cron TEXT,
     timezone TEXT,
     next_at INTEGER NOT NULL,
     content TEXT NOT NULL,
     source TEXT NOT NULL,
     delivery TEXT NOT NULL CHECK (delivery IN ('next-turn', 'next-step', 'interrupt')),
     message_id TEXT,
     idempotency_key TEXT UNIQUE,
     content_hash TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     last_message_id TEXT
   ) STRICT;
   CREATE INDEX schedules_due ON schedules (next_at);
   ALTER TABLE runs ADD COLUMN deadline_at INTEGER;`,
  // 17: a tree's shared budget (README "Prices and budgets"): at the session that owns it, what
  // each session of its tree last said it spent
  `CREATE TABLE budget_draws (
     member_id TEXT PRIMARY KEY,
     tokens INTEGER NOT NULL,
     usd REAL NOT NULL
   ) STRICT;`,
  // 18: a tree's budget is a cap: at the session that owns it, what each session's model call
  // under way reserved (store/budget-reservations.ts)
  `CREATE TABLE budget_reservations (
     member_id TEXT PRIMARY KEY,
     step_key TEXT NOT NULL,
     tokens INTEGER NOT NULL,
     usd REAL NOT NULL,
     expires_at INTEGER NOT NULL
   ) STRICT;`,
  // 19: an approval raised by a call made through a session's MCP face, or below one (README
  // "Approvals"): no MCP client's decide_approval decides it
  `ALTER TABLE approvals ADD COLUMN mcp_face INTEGER NOT NULL DEFAULT 0;`,
  // 20: the scopes an approve can take where it is not `once` alone (README "Approvals": an ACP
  // agent's permission request offers its allow options), as JSON
  `ALTER TABLE approvals ADD COLUMN scopes TEXT;`,
];

/**
 * Rows a step moves out of `flags` (named `<prefix><key>`) into a table of their own, right after
 * the step's statements, so an object written by older code keeps its answers: `insert` fills
 * `into` from `flags`, then the flags of every prefix are deleted. A move runs only where `flags`
 * holds a row of one of its prefixes, and creates `into` first (in its latest form) where the
 * object does not have it yet; elsewhere it changes nothing, so no table is made for nothing.
 */
interface FlagMove {
  prefixes: readonly string[];
  into: TableOnFirstUse;
  insert: string;
}

/** The moves of each session step, by the step's number (its version). */
const FLAG_MOVES: Readonly<Record<number, readonly FlagMove[]>> = {
  14: [
    {
      prefixes: ["call:", "call-message:", "start-key:"],
      into: "continuable_starts",
      // `call:<callKey>` = child id, `call-message:<callKey>` = its message id, and
      // `start-key:<childId>` = "<request key> <first run id>"
      insert: `INSERT INTO continuable_starts (child_id, call_key, message_id)
         SELECT f.value, substr(f.name, 6),
                (SELECT m.value FROM flags AS m WHERE m.name = 'call-message:' || substr(f.name, 6))
         FROM flags AS f WHERE substr(f.name, 1, 5) = 'call:'
         ON CONFLICT DO NOTHING;
       INSERT INTO continuable_starts (child_id, request_key, run_id)
         SELECT substr(name, 11),
                CASE WHEN instr(value, ' ') > 0 THEN substr(value, 1, instr(value, ' ') - 1) ELSE value END,
                CASE WHEN instr(value, ' ') > 0 THEN substr(value, instr(value, ' ') + 1) END
         FROM flags WHERE substr(name, 1, 10) = 'start-key:'
         ON CONFLICT (child_id) DO UPDATE SET request_key = excluded.request_key, run_id = excluded.run_id;`,
    },
    {
      prefixes: ["tree-slot:"],
      into: "tree_slots",
      insert: `INSERT INTO tree_slots (child_id)
         SELECT substr(name, 11) FROM flags WHERE substr(name, 1, 10) = 'tree-slot:' ON CONFLICT DO NOTHING;`,
    },
    {
      prefixes: ["cancelled:"],
      into: "cancelled_runs",
      // `cancelled:<runId>` = the parent that cancelled it
      insert: `INSERT INTO cancelled_runs (run_id, parent)
         SELECT substr(name, 11), value FROM flags WHERE substr(name, 1, 10) = 'cancelled:'
         ON CONFLICT DO NOTHING;`,
    },
  ],
};

export const SCHEMA_VERSION = SESSION_MIGRATIONS.length;

/**
 * The latest schema for an object that has none yet: every migration in one batch, with each
 * `ALTER TABLE t ADD COLUMN c` folded into `t`'s `CREATE TABLE`. An `ALTER TABLE` makes SQLite
 * rewrite and re-read the whole schema, which a brand-new child would pay on its creation path for
 * columns it could have been created with (a test checks that both paths give the same tables,
 * columns and indexes).
 */
export const freshSchema = once(() => foldAlters(SESSION_MIGRATIONS.join("\n")));

/**
 * Tables a session creates when it first uses them, not when it is born. A one-shot child that
 * answers and never delegates needs its header, log, inbox, loop state and outbox; the other
 * tables and their indexes were most of what a brand-new child's schema cost it (the profile's
 * `schema.ts` share, bench/README.md). Each is created, with its indexes, in its latest form, by
 * the first statement its store runs (first-use-tables.ts); until then its store's memo or an
 * `exists` check answers the reads that would find it empty.
 *
 * The rule for later migrations: a step that creates or alters one of these tables is skipped on
 * an object that does not have the table (its first use creates it in the form the step gives),
 * so a step never needs to ask whether the table is there.
 */
export const TABLES_ON_FIRST_USE = [
  "runs",
  "children",
  "seen",
  "links",
  "activation",
  "epochs",
  "flags",
  "remote_runs",
  "acp_runs",
  "continuable_starts",
  "tree_slots",
  "cancelled_runs",
  "approvals",
  "schedules",
  "budget_draws",
  "budget_reservations",
] as const;
export type TableOnFirstUse = (typeof TABLES_ON_FIRST_USE)[number];

/** The table a DDL statement creates, alters or indexes (undefined: not such a statement). */
function tableOf(statement: string): string | undefined {
  return /^\s*(?:CREATE TABLE(?: IF NOT EXISTS)?|ALTER TABLE|CREATE (?:UNIQUE )?INDEX(?: IF NOT EXISTS)? \w+ ON) (\w+)/.exec(
    statement,
  )?.[1];
}

function statementsOf(ddl: string): string[] {
  return ddl
    .split(";")
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

const onFirstUse = (table: string | undefined): boolean =>
  (TABLES_ON_FIRST_USE as readonly (string | undefined)[]).includes(table);

/** What a brand-new session is born with: the latest schema of every table not created on first use. */
export const birthSchema = once(
  () =>
    `${statementsOf(freshSchema())
      .filter((statement) => !onFirstUse(tableOf(statement)))
      .join(";\n")};`,
);

const META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT";

/** A brand-new session object's whole schema, with its version, as one batch (one statement call). */
const newSessionSchema = once(
  () => `${META_TABLE};
${birthSchema()}
INSERT INTO meta (key, value) VALUES ('schema_version', '${SESSION_MIGRATIONS.length}');`,
);

/** Each first-use table's latest `CREATE TABLE` and indexes, written to run once on any object. */
export const FIRST_USE_DDL: Readonly<Record<TableOnFirstUse, string>> = lazy(
  () =>
    Object.fromEntries(
      TABLES_ON_FIRST_USE.map((table) => [
        table,
        `${statementsOf(freshSchema())
          .filter((statement) => tableOf(statement) === table)
          .map((statement) =>
            statement
              .replace(/^CREATE TABLE /, "CREATE TABLE IF NOT EXISTS ")
              .replace(/^CREATE (UNIQUE )?INDEX /, "CREATE $1INDEX IF NOT EXISTS "),
          )
          .join(";\n")};`,
      ]),
    ) as Record<TableOnFirstUse, string>,
);

/** `make`'s value, made on the first call (the schema texts are folded when first needed, not at load). */
function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}

function foldAlters(ddl: string): string {
  let folded = ddl;
  for (const alter of ddl.matchAll(/ALTER TABLE (\w+) ADD COLUMN ([^;]+);/g)) {
    const [statement, table, column] = alter;
    if (table === undefined || column === undefined) continue;
    folded = folded.replace(statement, "");
    const create = folded.indexOf(`CREATE TABLE ${table} (`);
    const end = folded.indexOf(") STRICT;", create);
    if (create < 0 || end < 0) throw new Error(`migration adds a column to unknown table ${table}`);
    folded = `${folded.slice(0, end).trimEnd()},\n     ${column.trim()}\n   ${folded.slice(end)}`;
  }
  return folded;
}

/** Runs one of a step's moves out of `flags` (see FlagMove) over an object with `tables`. */
function moveFlags(sql: SqlStorage, { prefixes, into, insert }: FlagMove, tables: Set<string>): void {
  if (!tables.has("flags")) return;
  const named = prefixes.map(() => "substr(name, 1, ?) = ?").join(" OR ");
  const bindings = prefixes.flatMap((prefix) => [prefix.length, prefix]);
  if (sql.exec(`SELECT 1 FROM flags WHERE ${named} LIMIT 1`, ...bindings).toArray().length === 0) return;
  sql.exec(FIRST_USE_DDL[into]);
  tables.add(into);
  sql.exec(insert);
  sql.exec(`DELETE FROM flags WHERE ${named}`, ...bindings);
}

/** The names of this object's tables (never creates anything; empty: it was never initialized). */
export function tablesIn(sql: SqlStorage): Set<string> {
  return new Set(
    sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()
      .map((row) => row.name),
  );
}

/** Whether this object has ever been initialized (never creates anything). */
export function schemaExists(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
}

export function schemaVersion(sql: SqlStorage, exists = schemaExists(sql)): number {
  if (!exists) return 0;
  const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").toArray()[0];
  return row ? Number(row.value) : 0;
}

/**
 * Brings the schema to the latest version; the pending steps commit with the version bump. A
 * new object gets `meta`, `birthSchema()` and its version in one batch (`stepwise` forces
 * every step of every table, for the test that compares the two). An existing session object's
 * pending steps skip the tables created on first use that it does not have (`firstUse`, the
 * default for the session's migrations: TABLES_ON_FIRST_USE); each session step's moves out of
 * `flags` run right after it (FLAG_MOVES). `exists`: whether the object has a
 * schema at all, when the caller has just asked; `tables`: its tables, when the caller has just
 * listed them (a table a move creates is added to it, so the caller need not list them again). Returns true when it created the schema: the
 * object is brand-new and every table is empty.
 */
export function migrate(
  storage: DurableObjectStorage,
  migrations: readonly string[] = SESSION_MIGRATIONS,
  {
    stepwise = false,
    exists,
    firstUse = migrations === SESSION_MIGRATIONS,
    tables,
  }: { stepwise?: boolean; exists?: boolean; firstUse?: boolean; tables?: Set<string> } = {},
): boolean {
  const { sql } = storage;
  const from = schemaVersion(sql, exists);
  if (from >= migrations.length) return false;
  const fresh = from === 0 && migrations === SESSION_MIGRATIONS && !stepwise;
  // every pending step in one transaction with the version bump: all of them or none
  storage.transactionSync(() => {
    if (fresh) {
      sql.exec(newSessionSchema());
      return;
    }
    sql.exec(META_TABLE);
    const present = firstUse && from > 0 ? (tables ?? tablesIn(sql)) : undefined;
    for (let version = from; version < migrations.length; version++) {
      if (present) {
        for (const statement of statementsOf(migrations[version]!)) {
          const table = tableOf(statement);
          if (!onFirstUse(table) || present.has(table!)) sql.exec(statement);
        }
      } else sql.exec(migrations[version]!);
      // a session step's moves (another set of migrations has none)
      if (migrations[version] === SESSION_MIGRATIONS[version])
        for (const move of FLAG_MOVES[version + 1] ?? []) moveFlags(sql, move, present ?? tablesIn(sql));
    }
    sql.exec(
      "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      String(migrations.length),
    );
  });
  return from === 0;
}
