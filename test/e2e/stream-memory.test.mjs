// Idle event-stream subscribers on a large log, against a real `wrangler dev` (README, Security and limits
// "Streams": a replay waits for its reader rather than buffering the log in memory).
//
// The attack: a session with a log of about 12 MB, then 8 SSE subscribers and 8 WebSockets that
// read nothing at all (raw TCP clients that read their response head, then never read again).
// Before replays waited for their readers this made workerd buffer the whole log once per
// subscriber, and more (+390–490 MB in all here, where an object's isolate may use 128 MB). The
// bound asserted is on memory, never on time: workerd's resident memory (VmRSS of every workerd
// process in the server's process group) may grow by far less than one log per subscriber. Then
// a subscriber that does read gets every event once, in order, over each transport.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { WebSocket } from "ws";
import { allEvents, api, createSession } from "./lib/api.mjs";
import { groupMembers, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";
import { mb, settledRss } from "./lib/workerd-memory.mjs";

/** Each message is echoed by the scripted model: about 2 × 240 KiB of log per turn. */
const MESSAGE_CHARS = 240 * 1024;
const TURNS = 25;
const IDLE_PER_TRANSPORT = 8;
/**
 * The session's context window: wide enough that the echoed messages reach the log whole (the
 * model's view would otherwise cut a message over a quarter of the window, and the echo with it)
 * and that the 12 MB log is never compacted while it grows, so the log is the messages alone.
 * Past the default MAX_CONTEXT_WINDOW (1,000,000), so this test's server allows it.
 */
const CONTEXT_WINDOW = 10_000_000;
/**
 * The bound on workerd's growth: well under one log per idle subscriber (16 × 12 MB), and above
 * what streaming costs here. On loopback the kernel's socket buffers (wrangler's proxy is one
 * more hop) take in about 10 MB per idle connection, so workerd does send most of a 12 MB log to
 * each of them; the buffers it spent on that are garbage V8 frees when it collects, which it
 * does only after tens of MB of them piled up (measured: +70–75 MB in all with the pull-based
 * replays, +390–490 MB before them, when every replay was buffered whole).
 */
const MAX_GROWTH_BYTES = 128 * 1024 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A client that sends `head`, reads the response head (to know it was accepted) and then never
 * reads again: the socket is paused, so the kernel's window fills and the server must wait.
 */
function idleClient(server, head) {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, "127.0.0.1");
    let seen = "";
    const onData = (chunk) => {
      seen += chunk.toString("latin1");
      const end = seen.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.pause();
      socket.off("data", onData);
      resolve({ socket, status: Number(seen.slice(9, 12)) });
    };
    socket.on("data", onData);
    socket.on("error", reject);
    socket.write(head);
  });
}

function idleSse(server, id) {
  return idleClient(
    server,
    `GET /v1/sessions/${id}/events/stream HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      `Authorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
}

function idleWebSocket(server, id) {
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
  return idleClient(
    server,
    `GET /v1/sessions/${id}/events/stream HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      `Authorization: Bearer ${server.token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
}

/** Every event of the SSE stream until it has `lastSeq`, read as fast as they come. */
async function readSse(server, id, lastSeq) {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/v1/sessions/${id}/events/stream`, {
    headers: { authorization: `Bearer ${server.token}`, accept: "text/event-stream" },
    signal: controller.signal,
  });
  assert.equal(response.status, 200);
  const events = [];
  let buffered = "";
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const data = buffered
        .slice(0, end)
        .split("\n")
        .find((line) => line.startsWith("data: "));
      if (data) events.push(JSON.parse(data.slice(6)));
      buffered = buffered.slice(end + 2);
      end = buffered.indexOf("\n\n");
    }
    if (events.at(-1)?.seq === lastSeq) break;
  }
  controller.abort();
  return events;
}

/**
 * Every event over WebSockets until `lastSeq`: a replay longer than one window ends with the
 * close code 4008 ("the replay continues"), and the reader reconnects after its last seq.
 */
async function readWebSocket(server, id, lastSeq) {
  const events = [];
  let resumes = 0;
  for (;;) {
    const after = events.at(-1)?.seq ?? -1;
    const url = `${server.wsUrl}/v1/sessions/${id}/events/stream?after=${after}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${server.token}` } });
    const closed = await new Promise((resolve, reject) => {
      ws.on("message", (data) => {
        events.push(JSON.parse(data.toString("utf8")));
        if (events.at(-1).seq === lastSeq) ws.close(1000, "done");
      });
      ws.on("close", (code) => resolve(code));
      ws.on("error", reject);
    });
    if (events.at(-1)?.seq === lastSeq) return { events, resumes };
    assert.equal(closed, 4008, "a socket closes early only to say that the replay continues");
    resumes += 1;
  }
}

describe("idle subscribers on a large log (README, Security and limits: Streams)", {
  timeout: 600_000,
}, () => {
  let server;
  let dir;
  const idle = [];

  before(async () => {
    dir = tempDir();
    // a context window past the default limit (see the test), which this deployment allows
    server = await startDevServer({ persistTo: dir, vars: { MAX_CONTEXT_WINDOW: String(CONTEXT_WINDOW) } });
  });

  after(async () => {
    for (const { socket } of idle) socket.destroy();
    if (server) {
      const pgid = server.pgid;
      await server.stop();
      assert.deepEqual(groupMembers(pgid), [], "no wrangler or workerd process is left behind");
    }
    if (dir) removeDir(dir);
  });

  it("keeps workerd's memory far below one log per idle subscriber, and a reader still gets every event in order", {
    timeout: 540_000,
  }, async () => {
    const { id } = await createSession(server, { contextWindow: CONTEXT_WINDOW });
    for (let turn = 0; turn < TURNS; turn++) {
      const res = await api(server, "POST", `/v1/sessions/${id}/messages`, {
        body: { content: `${turn} ${"m".repeat(MESSAGE_CHARS)}` },
      });
      assert.equal(res.status, 202);
    }
    // waits on the session's view, not the log: reading a 12 MB log over and over would leave
    // garbage in workerd that a later collection frees, hiding what the subscribers cost
    const deadline = Date.now() + 120_000;
    for (;;) {
      const view = await api(server, "GET", `/v1/sessions/${id}`);
      if (view.body.status === "idle" && view.body.lastSeq >= TURNS * 6 - 1) break;
      assert.ok(Date.now() < deadline, `the turns did not end: ${JSON.stringify(view.body)}`);
      await sleep(250);
    }
    const baseline = await settledRss(server.pgid);

    for (let i = 0; i < IDLE_PER_TRANSPORT; i++) {
      const sse = await idleSse(server, id);
      assert.equal(sse.status, 200);
      idle.push(sse);
    }
    const afterSse = await settledRss(server.pgid);
    for (let i = 0; i < IDLE_PER_TRANSPORT; i++) {
      const ws = await idleWebSocket(server, id);
      assert.equal(ws.status, 101);
      idle.push(ws);
    }
    const afterAll = await settledRss(server.pgid);
    const growth = afterAll - baseline;
    console.log(
      `log of ${TURNS} turns: workerd RSS ${mb(baseline)}; with ${IDLE_PER_TRANSPORT} idle SSE subscribers ` +
        `${mb(afterSse)}; with ${IDLE_PER_TRANSPORT} idle WebSockets more ${mb(afterAll)} (+${mb(growth)})`,
    );
    assert.ok(growth < MAX_GROWTH_BYTES, `workerd grew by ${mb(growth)} (bound ${mb(MAX_GROWTH_BYTES)})`);

    // readers that read get the whole log, once and in order, while the idle ones stay open
    const log = await allEvents(server, id);
    const logBytes = log.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
    assert.ok(logBytes > 11 * 1024 * 1024, `the log holds ${logBytes} bytes`);
    const lastSeq = log.at(-1).seq;
    const overSse = await readSse(server, id, lastSeq);
    assert.deepEqual(
      overSse.map((e) => e.seq),
      log.map((e) => e.seq),
    );
    assert.deepEqual(overSse, log);
    const overWs = await readWebSocket(server, id, lastSeq);
    assert.deepEqual(
      overWs.events.map((e) => e.seq),
      log.map((e) => e.seq),
    );
    assert.deepEqual(overWs.events, log);
    assert.ok(overWs.resumes > 0, "a replay longer than one window resumes on a new socket");
  });
});
