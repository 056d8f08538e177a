// The `step-at-10k-events` row: one echo turn on a session whose log holds 10,000 conversation
// events after a compaction, beside the same turn on a fresh session, in interleaved rounds. A
// step must not cost more as the log grows: the session keeps its model view (the latest
// compaction's summary and the events after its boundary) in memory, so a step reads none of the
// log's older part. Every loop is bounded in count and in time.
import { textOf } from "./client.mjs";
import { pool, summarize } from "./stats.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The conversation events a view is made of (src/agent/context-view.ts). */
const CONVERSATION = new Set(["user/message", "assistant/message", "tool/result"]);

/** Every event of a session after `after`, in pages of 500; bounded by `deadline`. */
async function readEvents(client, id, after, deadline) {
  const events = [];
  for (let cursor = after; ; ) {
    const path = `/v1/sessions/${id}/events?after=${cursor}&limit=500`;
    const page = (await client.call("GET", path, undefined, 200)).body;
    events.push(...page.events);
    if (page.next === null || page.events.length === 0) return events;
    cursor = page.next;
    if (performance.now() >= deadline) throw new Error(`reading session ${id}'s events took too long`);
  }
}

/** Polls GET /v1/sessions/:id until it is idle with its log at least `length` events long; bounded. */
async function idleAt(client, id, length, deadline) {
  for (;;) {
    const view = await client.describe(id);
    if (view.status === "idle" && view.lastSeq + 1 >= length) return view;
    if (performance.now() >= deadline)
      throw new Error(`session ${id} not idle in time: ${JSON.stringify(view).slice(0, 300)}`);
    await sleep(100);
  }
}

/**
 * Builds the long session: `turns` plain text messages `m<i>`, sent through the product's RPC
 * entrypoint (`SubagentsEntrypoint.send`) from inside the Worker by the benchmark route
 * `/bench/send`, `batch` per request (each under MAX_PENDING_MESSAGES), `concurrency` in flight
 * within it, each with an idempotency key (a batch sent again is never doubled). No HTTP request
 * per message, so this process takes no CPU from workerd meanwhile. Each message is answered by
 * the scripted model in a turn of its own: a user message and its answer, 2 conversation events
 * per turn. Then checks the log: every event read back, the conversation events counted, every
 * answer the echo of its message.
 */
export async function buildLongSession(admin, { turns, concurrency, batch, budgetMs }) {
  const t0 = performance.now();
  const deadline = t0 + budgetMs;
  const session = await admin.createSession({ label: "bench-step-long" });
  // short texts: the view stays under the default window's compaction threshold while it grows,
  // so the one compaction is the one asked for later
  const text = (i) => `m${i}`;
  const sendBatch = async (b) => {
    const from = b * batch;
    const count = Math.min(batch, turns - from);
    const path = `/bench/send?session=${session.id}&from=${from}&count=${count}&inFlight=${concurrency}&prefix=m`;
    for (let attempt = 1; ; attempt++) {
      const { status, body } = await admin.call("POST", path, undefined, undefined, 120_000);
      if (status === 200) return;
      if (attempt >= 3 || performance.now() >= deadline)
        throw new Error(`POST ${path}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
      // a refused send (a full inbox, say): once the session caught up, the batch again
      await idleAt(admin, session.id, 0, deadline);
    }
  };
  const batches = await pool(Math.ceil(turns / batch), 1, deadline, sendBatch);
  if (batches * batch < turns)
    throw new Error(`sent ${batches} of ${Math.ceil(turns / batch)} batches in time`);
  const sentMs = performance.now() - t0;
  // each turn appends at least its message's admission, turn/start, claim, message, answer, turn/end
  const built = await idleAt(admin, session.id, turns * 6, deadline);
  const builtMs = performance.now() - t0;

  const events = await readEvents(admin, session.id, -1, deadline);
  const readMs = performance.now() - t0 - builtMs;
  const conversation = events.filter((e) => CONVERSATION.has(e.type));
  // the most messages the inbox held at once (admitted, not yet claimed by a turn)
  let pending = 0;
  let maxPending = 0;
  for (const e of events) {
    if (e.type === "agent/inbox/inserted") maxPending = Math.max(maxPending, ++pending);
    else if (e.type === "agent/inbox/claimed") pending -= 1;
  }
  const answers = new Map();
  let user;
  for (const e of conversation) {
    if (e.type === "user/message") user = textOf(e);
    else if (e.type === "assistant/message") answers.set(user, textOf(e));
  }
  const wrong = Array.from({ length: turns }, (_, i) => text(i)).filter(
    (t) => answers.get(t) !== `echo: ${t}`,
  );
  if (conversation.length !== 2 * turns || wrong.length > 0)
    throw new Error(
      `the long session holds ${conversation.length} conversation events for ${turns} turns; ` +
        `${wrong.length} messages without their echo (${wrong.slice(0, 3).join(", ")})`,
    );
  return {
    session,
    client: admin.withToken(session.token),
    turns,
    conversationEvents: conversation.length,
    events: built.lastSeq + 1,
    compactions: events.filter((e) => e.type === "context/compacted").length,
    maxPending,
    lastSeq: built.lastSeq,
    sentMs,
    builtMs,
    readMs,
  };
}

/**
 * Asks for a compaction (`POST …/compact`, the session idle) and waits for its `context/compacted`
 * event and for the session to be idle again; bounded by `budgetMs`.
 */
export async function compactSession(admin, target, { budgetMs }) {
  const t0 = performance.now();
  const deadline = t0 + budgetMs;
  const before = (await admin.describe(target.id)).lastSeq;
  await admin.call("POST", `/v1/sessions/${target.id}/compact`, undefined, 202);
  let compacted;
  while (compacted === undefined) {
    const path = `/v1/sessions/${target.id}/events?after=${before}&limit=500`;
    const page = (await admin.call("GET", path, undefined, 200)).body;
    compacted = page.events.find((e) => e.type === "context/compacted");
    if (compacted === undefined) {
      if (performance.now() >= deadline) throw new Error("no context/compacted event in time");
      await sleep(20);
    }
  }
  const ms = performance.now() - t0;
  target.lastSeq = (await idleAt(admin, target.id, compacted.seq + 1, deadline)).lastSeq;
  const { throughSeq, tokensBefore, tokensAfter, trigger } = compacted.data;
  return { ms, seq: compacted.seq, throughSeq, tokensBefore, tokensAfter, trigger };
}

/**
 * One echo turn, timed: from sending a plain text message (with the session's own token) to its
 * turn's `turn/end` on the session's event stream, which must have answered `echo: <text>` and
 * ended `completed`. The session is idle before (the previous turn ended), so the turn starts at
 * once.
 */
async function echoTurn(target, text) {
  const t0 = performance.now();
  const { messageId } = await target.client.send(target.id, text);
  let turn;
  let answer;
  for (;;) {
    const e = await target.stream.next(() => true, 10_000);
    if (e.type === "agent/inbox/claimed" && e.data.messageId === messageId) turn = e.data.turn;
    else if (turn !== undefined && e.type === "assistant/message") answer = textOf(e);
    else if (turn !== undefined && e.type === "turn/end" && e.data.turn === turn) {
      const elapsed = performance.now() - t0;
      if (answer !== `echo: ${text}` || e.data.reason !== "completed")
        throw new Error(
          `turn ${turn} of ${target.id} answered ${JSON.stringify(answer)}, ended ${e.data.reason}`,
        );
      return elapsed;
    }
  }
}

/**
 * `n` rounds (after `warmup`), each one echo turn on every target, the order alternating round by
 * round; returns each target's samples and how many turns each target had (warm-up included).
 * Streams are opened after each target's `lastSeq`, so none replays the log.
 */
export async function turnRounds(targets, { n, warmup, budgetMs, tag }) {
  const samples = targets.map(() => []);
  const open = [];
  let rounds = 0;
  try {
    for (const t of targets) open.push({ ...t, stream: await t.client.openStream(t.id, t.lastSeq) });
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < warmup + n && performance.now() < deadline; i++, rounds++) {
      const order = i % 2 === 0 ? open.map((_, k) => k) : open.map((_, k) => k).reverse();
      for (const k of order) {
        const ms = await echoTurn(open[k], `${tag} ${i}`);
        if (i >= warmup) samples[k].push(ms);
      }
    }
  } finally {
    for (const t of open) t.stream.close();
  }
  for (const t of targets) t.lastSeq = (await t.client.describe(t.id)).lastSeq;
  return { samples, rounds };
}

/**
 * SQLite rows read and written in the isolate (every object of the Worker) during `turns` echo
 * turns on a target, per turn, counted by the benchmark Worker's `/bench/sql` (bench/worker/sql-count.ts).
 */
async function rowsPerTurn(admin, target, turns, tag) {
  const stream = await target.client.openStream(target.id, target.lastSeq);
  try {
    await echoTurn({ ...target, stream }, `${tag} warm-up`);
    await admin.call("GET", "/bench/sql", undefined, 200); // a tally of nothing else
    await admin.call("POST", "/bench/sql?count=on", undefined, 200);
    for (let i = 0; i < turns; i++) await echoTurn({ ...target, stream }, `${tag} ${i}`);
    await admin.call("POST", "/bench/sql?count=off", undefined, 200);
  } finally {
    stream.close();
  }
  const { body } = await admin.call("GET", "/bench/sql", undefined, 200);
  target.lastSeq = (await target.client.describe(target.id)).lastSeq;
  const sum = (record) => Object.values(record).reduce((n, x) => n + x, 0);
  const per = (x) => Math.round((x / turns) * 10) / 10;
  return {
    statements: per(sum(body.statements)),
    rowsRead: per(sum(body.rowsRead)),
    rowsWritten: per(sum(body.rowsWritten)),
    uncounted: body.uncounted,
  };
}

/**
 * The row: builds the long session; times the echo turn on it beside a fresh session's, in
 * interleaved rounds, before the compaction (for comparison: the view then holds every
 * conversation event) and after it (the row's figure: the view holds the summary and the last
 * turn); then counts the SQLite rows one turn reads on each, after the compaction.
 */
export async function stepAtLongLog(admin, { turns, concurrency, n, warmup, budgetMs, log }) {
  const deadline = performance.now() + budgetMs;
  const left = () => Math.max(10_000, deadline - performance.now());
  log?.(`  building a session of ${turns} echo turns (${2 * turns} conversation events)`);
  const build = await buildLongSession(admin, { turns, concurrency, batch: 500, budgetMs: left() });
  log?.(
    `  ${build.events} events (${build.conversationEvents} conversation events) in ` +
      `${(build.builtMs / 1000).toFixed(1)} s, read back in ${(build.readMs / 1000).toFixed(1)} s; ` +
      `at most ${build.maxPending} messages pending at once`,
  );
  const long = { id: build.session.id, client: build.client, lastSeq: build.lastSeq };
  const created = await admin.createSession({ label: "bench-step-fresh" });
  const fresh = { id: created.id, client: admin.withToken(created.token), lastSeq: -1 };
  // the rounds before the compaction get a third of the time left, those after it half of what is
  // then left: the compaction and the row counts keep the rest
  const rounds = (share, tag) => ({
    n,
    warmup,
    budgetMs: Math.max(5_000, (deadline - performance.now()) * share),
    tag,
  });
  const before = await turnRounds([long, fresh], rounds(1 / 3, "before"));
  const compaction = await compactSession(admin, long, { budgetMs: left() });
  log?.(`  compacted through seq ${compaction.throughSeq} in ${(compaction.ms / 1000).toFixed(2)} s`);
  const after = await turnRounds([long, fresh], rounds(1 / 2, "after"));
  const rows = {
    long: await rowsPerTurn(admin, long, 20, "rows"),
    fresh: await rowsPerTurn(admin, fresh, 20, "rows"),
  };
  return {
    build,
    // the rounds before it added their turns to the long session
    compaction: { ...compaction, conversationEvents: build.conversationEvents + 2 * before.rounds },
    long: summarize(after.samples[0]),
    fresh: summarize(after.samples[1]),
    before: { long: summarize(before.samples[0]), fresh: summarize(before.samples[1]) },
    rows,
  };
}
