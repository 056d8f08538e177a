/**
 * The ordered, additive migrations of a session's SQLite database: step N (1-based) is the
 * schema's version N. A step is only ever appended, never edited: an object written by older code
 * runs the steps it has not run yet (schema.ts: `migrate`). The latest schema, a new session's
 * and each first-use table's are folded out of these steps (schema-texts.ts).
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

/** The latest schema version: the number of steps. */
export const SCHEMA_VERSION = SESSION_MIGRATIONS.length;
