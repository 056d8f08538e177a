// OTLP/HTTP span export across a restart of `wrangler dev` (README "Traces"): the collector holds
// the first export request open, the server dies with it, and after a restart on the same
// persistence directory the same batch is sent again. The receiver (test/setup/otlp-receiver.ts)
// decodes every request with the official OTLP definitions.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { decodeOtlpJson, spansOfRequest, startOtlpReceiver } from "../setup/otlp-receiver.ts";
import { api, createSession, sendMessage, turnEnds, waitForEvents } from "./lib/api.mjs";
import { groupMembers, randomToken, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";

const TEST_TIMEOUT_MS = 300_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `read()` until `ok` holds for its value; throws after `timeoutMs`. */
async function until(read, ok, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const agentOf = (span) => span.attributes.find((a) => a.key === "gen_ai.agent.id")?.value.stringValue;

describe("span export across a restart of wrangler dev", () => {
  const servers = [];
  const dirs = [];
  const receivers = [];

  afterEach(async () => {
    const stopping = servers.splice(0);
    for (const server of stopping) await server.stop();
    for (const server of stopping)
      assert.deepEqual(groupMembers(server.pgid), [], "no process is left behind");
    for (const dir of dirs.splice(0)) removeDir(dir);
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  it("a batch whose request died with the server is sent again after the restart: every span arrives, and a span received twice is the same span", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    await receiver.setMode({ mode: "hang", times: 1 });
    const dir = tempDir();
    dirs.push(dir);
    const token = randomToken();
    const vars = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: "x-otlp-token=e2e%20secret",
      OTEL_SERVICE_NAME: "subagents-e2e",
      // a batch waits a little for more (the default is 5 s)
      OTEL_BSP_SCHEDULE_DELAY: "300",
    };
    const start = async () => {
      const server = await startDevServer({ persistTo: dir, token, vars });
      servers.push(server);
      return server;
    };
    const ofSession = (id) => receiver.received.filter((r) => r.spans.some((s) => agentOf(s) === id));

    const first = await start();
    const session = await createSession(first, { label: "restarted" });
    const turn = JSON.stringify({
      script: [{ call: [{ tool: "echo", args: { text: "ping" } }] }, { say: "done" }],
    });
    await sendMessage(first, session.id, turn, session.token);
    await waitForEvents(first, session.id, (es) => turnEnds(es).length >= 1);
    // the collector got the batch and holds it: no answer, so the cursor stays
    const [held] = await until(
      () => ofSession(session.id),
      (r) => r.length >= 1,
      "the first export request",
    );
    assert.equal(held.status, null);
    assert.equal(held.decoded, true, held.error);
    await sleep(1_000); // the pass that started it has armed its watchdog alarm

    // the server dies with the request out; a new one starts on the same storage
    await first.stop();
    servers.splice(servers.indexOf(first), 1);
    const second = await start();

    const answered = await until(
      () => ofSession(session.id).filter((r) => r.status === 200),
      (r) => r.length >= 1,
      "the batch sent again after the restart",
      120_000,
    );
    for (const request of [held, ...answered]) {
      assert.equal(request.decoded, true, request.error);
      assert.equal(request.serviceName, "subagents-e2e");
      assert.equal(request.headers["x-otlp-token"], "e2e secret");
    }

    // what GET …/trace shows, decoded the same way: every span of it arrived
    const res = await api(second, "GET", `/v1/sessions/${session.id}/trace`, { token: session.token });
    assert.equal(res.status, 200);
    const decoded = await decodeOtlpJson(JSON.stringify(res.body));
    assert.ok(decoded.ok, decoded.error);
    const route = spansOfRequest(decoded.request).spans;
    assert.equal(route.length, 4);
    const received = new Map();
    for (const request of ofSession(session.id))
      for (const span of request.spans) {
        const seen = received.get(span.spanId);
        // a span received twice is the same span: same ids, same content, byte for byte
        if (seen) assert.equal(JSON.stringify(span), JSON.stringify(seen));
        else received.set(span.spanId, span);
      }
    for (const span of route)
      assert.deepEqual(received.get(span.spanId), span, `span ${span.name} arrived as shown`);
    assert.equal(received.size, route.length);
    const accepted = answered.flatMap((r) => r.spans).map((s) => s.spanId);
    assert.deepEqual([...accepted].sort(), route.map((s) => s.spanId).sort());
    // the held batch was sent again, the same spans in it
    assert.ok(held.spans.every((span) => accepted.includes(span.spanId)));
  });
});
