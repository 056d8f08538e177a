// What reading a long log costs the tenants beside it (README "Security and limits", the block
// between `bounded-reads` markers): `npm run bench -- --only=reads`. One tenant's session holds a
// log of about 60 MB; a second tenant (a TENANT_TOKENS entry of the bench Worker) reads its own
// small session, first with nothing else running, then while four trace reads of the long log
// (each walking every page of `GET …/trace`) run at once, over and over. A trace read folds the
// log a page at a time, so it costs workerd a few pages of memory; what it costs the others is
// the time the fold holds the isolate they share, which the second tenant's reads show. Every
// loop is bounded in count and in time.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeBlock } from "../../scripts/lib/readme-block.mjs";
import { mb, peakGrowth, settledRss } from "../../test/e2e/lib/workerd-memory.mjs";
import { ms, percentile } from "./stats.mjs";

/** Each message is echoed by the scripted model: about 2 × 240 KiB of log per turn, 60 MB in all. */
const MESSAGE_CHARS = 240 * 1024;
const LONG_TURNS = 125;
/** The second tenant's session: a few short turns, so a page of its events is a full page. */
const SMALL_TURNS = 20;
const EVENTS_PAGE = 50;
/** Trace reads of the long log at once. */
const READERS = 4;
/** The second tenant's reads measured idle, and as many beside the trace reads (each kind). */
const SAMPLES = 100;
/** Trace reads of the long log one at a time, before the four at once. */
const ALONE_WALKS = 10;
const TRACE_PAGE_TIMEOUT_MS = 120_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The bench Worker's bindings for a second tenant, and that tenant's admin token. */
export function secondTenant() {
  const token = `bench-tenant-${randomBytes(24).toString("hex")}`;
  return { token, bindings: { TENANT_TOKENS: JSON.stringify({ [token]: "bench-other" }) } };
}

/** This process's process group: workerd, started by Miniflare, is in it. */
function ownGroup() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

/** Polls the session until it is idle with at least `length` events; bounded by `deadline`. */
async function idleAt(client, id, length, deadline) {
  for (;;) {
    const view = await client.describe(id);
    if (view.status === "idle" && view.lastSeq + 1 >= length) return view;
    if (performance.now() >= deadline)
      throw new Error(`session ${id} not idle in time: ${JSON.stringify(view).slice(0, 300)}`);
    await sleep(500);
  }
}

/** The log's size: every event read back in pages, its JSON's bytes added up. */
async function logBytes(client, id, deadline) {
  let bytes = 0;
  let events = 0;
  for (let after = -1; ; ) {
    const page = (
      await client.call("GET", `/v1/sessions/${id}/events?after=${after}&limit=100`, undefined, 200)
    ).body;
    for (const e of page.events) bytes += Buffer.byteLength(JSON.stringify(e));
    events += page.events.length;
    if (page.next === null || page.events.length === 0) return { bytes, events };
    after = page.next;
    if (performance.now() >= deadline) throw new Error(`reading session ${id}'s log took too long`);
  }
}

/** One trace read: every page of the session's trace, in order; its time and its pages. */
async function walkTrace(client, id) {
  const t0 = performance.now();
  let pages = 0;
  let spans = 0;
  for (let cursor; ; ) {
    const query = cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    const { body } = await client.call(
      "GET",
      `/v1/sessions/${id}/trace${query}`,
      undefined,
      200,
      TRACE_PAGE_TIMEOUT_MS,
    );
    pages += 1;
    for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans += s.spans.length;
    if (body.next === undefined) return { ms: performance.now() - t0, pages, spans };
    cursor = body.next;
  }
}

/** The second tenant's two reads, taking turns, `n` of each; their times in ms by kind. */
async function smallReads(client, id, n, deadline) {
  const times = { session: [], events: [] };
  const reads = {
    session: () => client.call("GET", `/v1/sessions/${id}`, undefined, 200),
    events: () =>
      client.call("GET", `/v1/sessions/${id}/events?after=-1&limit=${EVENTS_PAGE}`, undefined, 200),
  };
  for (let i = 0; i < n && performance.now() < deadline; i++) {
    for (const kind of i % 2 === 0 ? ["session", "events"] : ["events", "session"]) {
      const t0 = performance.now();
      await reads[kind]();
      times[kind].push(performance.now() - t0);
    }
  }
  if (times.session.length < n) throw new Error(`took ${times.session.length} of ${n} samples in time`);
  return times;
}

const stat = (samples) => ({
  n: samples.length,
  p50: Math.round(percentile(samples, 50) * 100) / 100,
  p90: Math.round(percentile(samples, 90) * 100) / 100,
});

/**
 * The measurement: builds the long log (tenant `default`, through `admin`) and the second
 * tenant's session (through `tenant`), then the second tenant's reads idle and beside the trace
 * reads, and workerd's growth at its peak above what it settled at before them.
 */
export async function measureBoundedReads(admin, tenant, { budgetMs, log }) {
  const deadline = performance.now() + budgetMs;
  const pgid = ownGroup();

  log(`bounded reads: a log of ${LONG_TURNS} turns of 2 × ${MESSAGE_CHARS / 1024} KiB`);
  const t0 = performance.now();
  const long = await admin.createSession({ label: "bench-long-log", contextWindow: 1_000_000 });
  for (let turn = 0; turn < LONG_TURNS; turn++)
    await admin.send(long.id, `${turn} ${"m".repeat(MESSAGE_CHARS)}`, `long-${turn}`);
  await idleAt(admin, long.id, LONG_TURNS * 6, deadline);
  const builtMs = performance.now() - t0;
  const size = await logBytes(admin, long.id, deadline);
  log(`  ${mb(size.bytes)} in ${size.events} events, built in ${(builtMs / 1000).toFixed(1)} s`);

  const small = await tenant.createSession({ label: "bench-other-tenant" });
  for (let turn = 0; turn < SMALL_TURNS; turn++) await tenant.send(small.id, `s${turn}`, `small-${turn}`);
  await idleAt(tenant, small.id, SMALL_TURNS * 6, deadline);
  // the second tenant cannot see the long session
  const foreign = await tenant.call("GET", `/v1/sessions/${long.id}`);
  if (foreign.status !== 404) throw new Error(`the second tenant read the long session: ${foreign.status}`);

  log(`  the second tenant's reads, idle (${SAMPLES} of each)`);
  await smallReads(tenant, small.id, 20, deadline); // warm-up
  const idle = await smallReads(tenant, small.id, SAMPLES, deadline);

  log(`  ${ALONE_WALKS} trace reads of the long log, one at a time`);
  const alone = [];
  for (let i = 0; i < ALONE_WALKS && performance.now() < deadline; i++)
    alone.push((await walkTrace(admin, long.id)).ms);

  log(`  the second tenant's reads beside ${READERS} trace reads of the long log at once, over and over`);
  const baseline = await settledRss(pgid);
  const walks = [];
  let reading = true;
  const { growth, value: busy } = await peakGrowth(pgid, baseline, async () => {
    const readers = Array.from({ length: READERS }, async () => {
      while (reading && performance.now() < deadline) walks.push(await walkTrace(admin, long.id));
    });
    try {
      // the readers' first pages are under way before the first sample
      await sleep(200);
      return await smallReads(tenant, small.id, SAMPLES, deadline);
    } finally {
      reading = false;
      await Promise.all(readers);
    }
  });
  if (walks.length === 0) throw new Error("no trace read ended");
  const pages = walks.map((w) => w.pages);
  const spans = walks.map((w) => w.spans);
  if (new Set(spans).size !== 1)
    throw new Error(`trace reads saw different span counts: ${[...new Set(spans)]}`);
  return {
    log: { turns: LONG_TURNS, bytes: size.bytes, events: size.events, builtMs: Math.round(builtMs) },
    readers: READERS,
    eventsPage: EVENTS_PAGE,
    reads: {
      session: { idle: stat(idle.session), busy: stat(busy.session) },
      events: { idle: stat(idle.events), busy: stat(busy.events) },
    },
    traceAlone: stat(alone),
    trace: {
      walks: walks.length,
      pages: Math.max(...pages),
      spans: spans[0],
      ...stat(walks.map((w) => w.ms)),
    },
    workerd: { baselineBytes: baseline, peakGrowthBytes: growth },
  };
}

const times = (s) => `${ms(s.p50)} / ${ms(s.p90)} ms`;

/** The README block: the second tenant's reads idle and beside the trace reads, and what those cost. */
export function boundedReadsBlock(r, { revision, date, command }) {
  const row = (what, x) =>
    `| ${what} | ${times(x.idle)} | ${times(x.busy)} | ${(x.busy.p50 / x.idle.p50).toFixed(2)}x |`;
  return [
    `| the second tenant's read | idle: p50 / p90 | beside ${r.readers} trace reads: p50 / p90 | p50 ratio |`,
    "|---|---|---|---|",
    row("`GET /v1/sessions/:id`", r.reads.session),
    row(`\`GET …/events?limit=${r.eventsPage}\``, r.reads.events),
    "",
    `The long log: ${r.log.turns} turns, ${(r.log.bytes / 1e6).toFixed(1)} MB in ` +
      `${r.log.events.toLocaleString("en-US")} events; a trace read reads every page of its trace ` +
      `(${r.trace.pages} page${r.trace.pages === 1 ? "" : "s"}, ${r.trace.spans} spans). One trace read alone: ` +
      `p50 ${ms(r.traceAlone.p50)} ms (${r.traceAlone.n} reads). Four at once, over and over: p50 ` +
      `${ms(r.trace.p50)} ms, p90 ${ms(r.trace.p90)} ms (${r.trace.walks} reads), and workerd's memory grew by ` +
      `at most ${mb(r.workerd.peakGrowthBytes)} above the ${mb(r.workerd.baselineBytes)} it had settled at. ` +
      "Here workerd runs every Durable Object of the Worker in one isolate, which runs one request's " +
      "JavaScript at a time; a session folds its log into a trace page four reads of the log at a time " +
      "(about 1 MiB of it, the messages' text left unread in SQLite) and gives the isolate back between " +
      "them, so the second tenant's reads wait for a few reads of the log, never for a whole one. " +
      `${r.reads.session.idle.n} reads of each kind idle and as many beside the trace reads, one at a time, ` +
      "over loopback HTTP against workerd (Miniflare).",
    "",
    `Written by \`${command}\` (${revision}) on ${date}.`,
  ].join("\n");
}

/** Writes `block` between README.md's `bounded-reads` markers, and the figures into `resultsFile`. */
export function writeBoundedReads(root, resultsFile, block, results) {
  writeBlock(join(root, "README.md"), "bounded-reads", block);
  let previous = {};
  try {
    previous = JSON.parse(readFileSync(resultsFile, "utf8"));
  } catch {
    // no earlier run: a file of this entry alone
  }
  mkdirSync(dirname(resultsFile), { recursive: true });
  writeFileSync(resultsFile, `${JSON.stringify({ ...previous, boundedReads: results }, null, 2)}\n`);
}
