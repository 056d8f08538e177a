// The measurements. Each takes a Client (admin token) and bounds every loop in count and time.
import { textOf } from "./client.mjs";
import { pool, summarize } from "./stats.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls GET /v1/sessions/:id until `done(view)`; bounded by `timeoutMs`. */
export async function waitFor(client, id, done, timeoutMs, everyMs = 100) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const view = await client.describe(id);
    if (done(view)) return view;
    if (performance.now() >= deadline)
      throw new Error(`session ${id} not ready in ${timeoutMs} ms: ${JSON.stringify(view)}`);
    await sleep(everyMs);
  }
}

/**
 * The latency rows, interleaved so that every row sees the same background load: each round
 * runs, one after the other,
 * * floor A: POST /bench/floor/write (one Worker -> DO RPC doing one durable write);
 * * accepted: POST /v1/sessions/:id/messages -> 202, plain text, round-robin over `sessions`
 *   sessions, with their session tokens; each message starts its echo turn right away;
 * * acceptedAdmin: the same with the admin token, which skips the per-token rate limiter;
 * * busy: the same to sessions that are inside a long scripted turn (`think`), so the message
 *   only joins the inbox: the accept path alone (those turns are interrupted at the end);
 * * echo: from sending a text message to receiving its `assistant/message` ("echo: <text>") on
 *   the session's event stream, also noting when its 202 came back; round-robin too.
 * Spreading over sessions also keeps each session token under the API's per-token rate limit.
 */
export async function latencies(admin, { n, warmup, sessions, budgetMs }) {
  const open = async (label) => {
    const created = await admin.createSession({ label });
    return { id: created.id, client: admin.withToken(created.token) };
  };
  const plain = [];
  const viaAdmin = [];
  const busy = [];
  for (let i = 0; i < sessions; i++) plain.push(await open(`bench-accept-${i}`));
  for (let i = 0; i < sessions; i++) viaAdmin.push(await open(`bench-accept-admin-${i}`));
  for (let i = 0; i < sessions; i++) busy.push(await open(`bench-busy-${i}`));
  const echo = [];
  for (let i = 0; i < sessions; i++) echo.push(await open(`bench-echo-${i}`));

  const think = JSON.stringify({ script: [{ think: 600_000 }, { say: "done" }] });
  for (const s of busy) {
    await s.client.send(s.id, think);
    await waitForEvent(s.client, s.id, -1, (e) => e.type === "user/message", 10_000);
  }
  const streams = [];
  const samples = { floor: [], accepted: [], acceptedAdmin: [], busy: [], echo: [], echoAccept: [] };
  const timed = async (list, fn) => {
    const t0 = performance.now();
    await fn();
    if (list) list.push(performance.now() - t0);
  };
  try {
    for (const e of echo) streams.push(await e.client.openStream(e.id, -1));
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
      const keep = i >= warmup;
      await timed(keep && samples.floor, () =>
        admin.call("POST", "/bench/floor/write?key=floor-a", undefined, 200),
      );
      const p = plain[i % sessions];
      await timed(keep && samples.accepted, () => p.client.send(p.id, `hello ${i}`));
      const a = viaAdmin[i % sessions];
      await timed(keep && samples.acceptedAdmin, () => admin.send(a.id, `hello ${i}`));
      const b = busy[i % sessions];
      await timed(keep && samples.busy, () => b.client.send(b.id, `queued ${i}`));
      const e = echo[i % sessions];
      const { total, accepted } = await echoOnce(e.client, e.id, streams[i % sessions], `echo bench ${i}`);
      if (keep) {
        samples.echoAccept.push(accepted);
        samples.echo.push(total);
      }
    }
  } finally {
    for (const stream of streams) stream.close();
    for (const s of busy) await s.client.call("POST", `/v1/sessions/${s.id}/interrupt`, undefined, 202);
  }
  for (const s of [...plain, ...viaAdmin]) await waitFor(admin, s.id, (v) => v.status === "idle", 30_000);
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
}

/**
 * One echo: sends the plain text `text` to session `id` and waits for its `assistant/message`
 * (`echo: <text>`) on `stream`, the session's open event stream (bounded by `timeoutMs`).
 * Resolves with the ms from the send to that answer (`total`) and to the 202 (`accepted`).
 */
export async function echoOnce(client, id, stream, text, timeoutMs = 10_000) {
  const t0 = performance.now();
  await client.send(id, text);
  const accepted = performance.now() - t0;
  await stream.next(
    (event) => event.type === "assistant/message" && textOf(event) === `echo: ${text}`,
    timeoutMs,
  );
  return { total: performance.now() - t0, accepted };
}

/** Polls GET /v1/sessions/:id/events after `after` until an event matches; bounded. */
async function waitForEvent(client, id, after, predicate, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const path = `/v1/sessions/${id}/events?after=${after}&limit=500`;
    const page = (await client.call("GET", path, undefined, 200)).body;
    if (page.events.some(predicate)) return;
    if (performance.now() >= deadline)
      throw new Error(`no matching event in session ${id} in ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * Builds a session with at least `events` events through the public path: plain text messages
 * sent concurrently (each with an idempotency key, so a retried send is never doubled), each
 * answered by the scripted model in its own turn. Returns the session and how long it took.
 */
export async function buildLargeSession(admin, { events, concurrency, budgetMs }) {
  const t0 = performance.now();
  const deadline = t0 + budgetMs;
  const session = await admin.createSession({ label: "bench-large" });
  const client = admin.withToken(session.token);
  // the admin token: the session token's rate limit (600 a minute) would throttle the build
  const send = async (i) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await admin.send(session.id, `message ${i}`, `bench-large-${i}`);
      } catch (error) {
        if (attempt >= 3 || performance.now() >= deadline) throw error;
      }
    }
  };
  const idle = (target) => (v) => v.status === "idle" && v.lastSeq + 1 >= target;
  // a first batch tells how many events one message makes in this version of the runtime
  const probe = 100;
  await pool(probe, concurrency, deadline, send);
  let view = await waitFor(
    admin,
    session.id,
    (v) => v.status === "idle",
    Math.max(30_000, deadline - performance.now()),
  );
  const perMessage = (view.lastSeq + 1) / probe;
  const messages = Math.min(Math.ceil(events / perMessage), 200_000);
  // the send rate per quarter of the build shows whether appending slows down as the log grows
  const total = messages - probe;
  const quarter = Math.max(1, Math.ceil(total / 4));
  const marks = [{ at: performance.now(), done: 0 }];
  let done = 0;
  const sent =
    probe +
    (await pool(total, concurrency, deadline, async (i) => {
      await send(probe + i);
      if (++done % quarter === 0 || done === total) marks.push({ at: performance.now(), done });
    }));
  const sentMs = performance.now() - t0;
  const quarterRates = marks
    .slice(1)
    .map((m, q) => Math.round((m.done - marks[q].done) / ((m.at - marks[q].at) / 1000)));
  view = await waitFor(
    admin,
    session.id,
    idle(sent * perMessage),
    Math.max(30_000, deadline - performance.now()),
    250,
  );
  return {
    session,
    client,
    messages: sent,
    events: view.lastSeq + 1,
    perMessage,
    sentMs,
    quarterRates,
    totalMs: performance.now() - t0,
  };
}

/** Warm GET /v1/sessions/:id latency, alternating between the given sessions. */
export async function describeWarm(targets, { n, warmup, budgetMs }) {
  const samples = targets.map(() => []);
  const deadline = performance.now() + budgetMs;
  for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
    for (const [k, t] of targets.entries()) {
      const t0 = performance.now();
      await t.client.describe(t.id);
      if (i >= warmup) samples[k].push(performance.now() - t0);
    }
  }
  return samples.map(summarize);
}

/**
 * Cold open: restarts workerd (same persistence), warms the Worker isolate with /v1/health, then
 * times the first GET /v1/sessions/:id of each session: the object starts and reopens its SQLite.
 * The order alternates between rounds.
 */
export async function describeCold(worker, targets, { rounds }) {
  const samples = targets.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const url = await worker.restart();
    for (const t of targets) t.client.url = url;
    // warm the Worker isolate and the Durable Object namespace (an unknown id stores nothing)
    await targets[0].client.call("GET", "/v1/health", undefined, 200);
    await targets[0].client.call("GET", `/v1/sessions/${crypto.randomUUID()}`, undefined, 404);
    const order = r % 2 === 0 ? targets.map((_, k) => k) : targets.map((_, k) => k).reverse();
    for (const k of order) {
      const t0 = performance.now();
      await targets[k].client.describe(targets[k].id);
      samples[k].push(performance.now() - t0);
    }
  }
  return { samples, url: targets[0].client.url, summary: samples.map(summarize) };
}
