// The trace export rows: what OTLP/HTTP span export (OTEL_EXPORTER_OTLP_ENDPOINT) costs the work
// it traces. The same echo and spawn-to-result as the latency and delegation rows
// (scenarios.mjs `echoOnce`, delegation.mjs `spawnToResult`) on two Workers of the same build, one
// with export off and one posting its finished spans to a collector in this process, in
// interleaved rounds (off and on back to back, the order alternating round by round), so the
// ratio on / off compares samples taken under the same background load. Every loop is bounded in
// count and in time.
import { createServer } from "node:http";
import { spawnToResult } from "./delegation.mjs";
import { echoOnce } from "./scenarios.mjs";
import { summarize } from "./stats.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A minimal OTLP/HTTP JSON collector on a random loopback port: `POST /v1/traces` answers 200
 * `{}` (a full success) and counts the request, its bytes and its spans (by the first word of
 * their names: `invoke_agent`, `chat`, `execute_tool`); a body that is not OTLP JSON answers 400,
 * any other path or method 404, both counted. `url` is the base URL for
 * OTEL_EXPORTER_OTLP_ENDPOINT. The work per request is one JSON parse, so it takes little of this
 * process's CPU from the timed requests.
 */
export async function startOtlpSink() {
  const counts = { requests: 0, spans: 0, bytes: 0, malformed: 0, otherRequests: 0, byKind: {} };
  let lastAt = 0;
  let open = 0;
  const server = createServer((request, response) => {
    open++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open--;
      lastAt = performance.now();
    };
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("error", close);
    request.on("end", () => {
      close();
      const answer = (status, body) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(body);
      };
      if (request.method !== "POST" || new URL(request.url, "http://sink").pathname !== "/v1/traces") {
        counts.otherRequests++;
        return answer(404, "{}");
      }
      const body = Buffer.concat(chunks);
      let spans;
      try {
        spans = JSON.parse(body.toString("utf8")).resourceSpans.flatMap((r) =>
          r.scopeSpans.flatMap((s) => s.spans ?? []),
        );
      } catch {
        counts.malformed++;
        return answer(400, '{"error":"not OTLP JSON"}');
      }
      counts.requests++;
      counts.bytes += body.length;
      counts.spans += spans.length;
      for (const span of spans) {
        const kind = String(span.name).split(" ")[0];
        counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
      }
      answer(200, "{}");
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** A copy of the counts so far. */
    counts: () => ({ ...counts, byKind: { ...counts.byKind } }),
    /**
     * Waits until no request has arrived for `quietMs` and none is open (at most `timeoutMs`),
     * so the spans of the last rounds are counted; resolves with the counts.
     */
    async settle({ quietMs = 1_000, timeoutMs = 10_000 } = {}) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline && (open > 0 || performance.now() - lastAt < quietMs))
        await sleep(100);
      return this.counts();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The rounds: `off` and `on` are admin clients of the Worker with export off and of the one with
 * export on. On each: `sessions` echo sessions (each with its own session token and one open event
 * stream, round-robin as in the echo row) and `parents` spawn parents (admin token, as in the
 * spawn rows). Each round times, off and on back to back (the order alternating round by round),
 * one echo (send to `echo: <text>` on the stream) and then one spawn to result; `warmup` rounds
 * first, then up to `n`, within `budgetMs`.
 */
export async function exportRounds(off, on, { n, warmup, sessions, parents, budgetMs }) {
  const sides = [
    { name: "off", client: off, echo: [], parents: [] },
    { name: "on", client: on, echo: [], parents: [] },
  ];
  const samples = { echo: { off: [], on: [] }, spawn: { off: [], on: [] } };
  const refusals = new Map();
  try {
    for (const side of sides) {
      for (let k = 0; k < sessions; k++) {
        const created = await side.client.createSession({ label: `bench-export-echo-${k}` });
        const client = side.client.withToken(created.token);
        side.echo.push({ id: created.id, client, stream: await client.openStream(created.id, -1) });
      }
      for (let k = 0; k < parents; k++)
        side.parents.push((await side.client.createSession({ label: `bench-export-spawn-${k}` })).id);
    }
    const deadline = performance.now() + budgetMs;
    let rounds = 0;
    for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
      const keep = i >= warmup;
      const order = i % 2 === 0 ? sides : [sides[1], sides[0]];
      for (const side of order) {
        const e = side.echo[i % sessions];
        const { total } = await echoOnce(e.client, e.id, e.stream, `export bench ${i}`);
        if (keep) samples.echo[side.name].push(total);
      }
      for (const side of order) {
        const parent = side.parents[i % parents];
        const { total } = await spawnToResult(side.client, parent, refusals, deadline + 30_000);
        if (keep) samples.spawn[side.name].push(total);
      }
      if (keep) rounds++;
    }
    return {
      rounds,
      sessions,
      parents,
      echo: { off: summarize(samples.echo.off), on: summarize(samples.echo.on) },
      spawn: { off: summarize(samples.spawn.off), on: summarize(samples.spawn.on) },
      refusals: Object.fromEntries(refusals),
    };
  } finally {
    for (const side of sides) for (const e of side.echo) e.stream.close();
  }
}
