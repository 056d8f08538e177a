// The public HTTP API over real HTTP against `wrangler dev` (one server for this file).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  allEvents,
  api,
  assistantTexts,
  createSession,
  openStream,
  range,
  sendMessage,
  seqs,
  turnEnds,
  waitForEvents,
} from "./lib/api.mjs";
import { groupMembers, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";

const TEST_TIMEOUT_MS = 120_000;

describe("the HTTP API over wrangler dev", { timeout: 240_000 }, () => {
  let server;
  let dir;

  before(async () => {
    dir = tempDir();
    server = await startDevServer({ persistTo: dir });
  });

  after(async () => {
    if (server) {
      const pgid = server.pgid;
      await server.stop();
      assert.deepEqual(groupMembers(pgid), [], "no wrangler or workerd process is left behind");
    }
    if (dir) removeDir(dir);
  });

  it("GET /v1/health answers {ok: true, version}", { timeout: TEST_TIMEOUT_MS }, async () => {
    const res = await api(server, "GET", "/v1/health", { token: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(typeof res.body.version, "string");
    assert.ok(res.body.version.length > 0, "version is not empty");
    assert.deepEqual(Object.keys(res.body).sort(), ["ok", "version"]);
  });

  it("refuses requests without a valid token", { timeout: TEST_TIMEOUT_MS }, async () => {
    const missing = await api(server, "POST", "/v1/sessions", { token: null, body: {} });
    assert.equal(missing.status, 401);
    assert.equal(missing.body.error.code, "UNAUTHENTICATED");
    const wrong = await api(server, "POST", "/v1/sessions", { token: "not-the-admin-token", body: {} });
    assert.equal(wrong.status, 401);
  });

  it("creates a session, accepts a message and answers `echo: <text>` in the log", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const session = await createSession(server);
    assert.match(session.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
    assert.equal(typeof session.token, "string");

    const sent = await sendMessage(server, session.id, "hello over http", session.token);
    assert.equal(typeof sent.messageId, "string");

    const events = await waitForEvents(
      server,
      session.id,
      (es) => turnEnds(es).length >= 1,
      20_000,
      session.token,
    );
    assert.deepEqual(assistantTexts(events), ["echo: hello over http"]);
    assert.deepEqual(seqs(events), range(0, events.length), "seq starts at 0 and is contiguous");
    const userMessages = events.filter((e) => e.type === "user/message");
    assert.equal(userMessages.length, 1);
    assert.equal(userMessages[0].data.messageId, sent.messageId);
    assert.deepEqual(
      turnEnds(events).map((e) => e.data),
      [{ turn: 1, reason: "completed" }],
    );

    // the admin token reads the same log
    assert.deepEqual(await allEvents(server, session.id), events);
    const view = await api(server, "GET", `/v1/sessions/${session.id}`, { token: session.token });
    assert.equal(view.status, 200);
    assert.equal(view.body.id, session.id);
  });

  it("a session token does not open another session (404)", { timeout: TEST_TIMEOUT_MS }, async () => {
    const a = await createSession(server);
    const b = await createSession(server);
    const res = await api(server, "GET", `/v1/sessions/${b.id}/events`, { token: a.token });
    assert.equal(res.status, 404);
  });

  it("the WebSocket stream replays from ?after, then delivers live events", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const session = await createSession(server);
    await sendMessage(server, session.id, "first", session.token);
    const firstLog = await waitForEvents(server, session.id, (es) => turnEnds(es).length >= 1, 20_000);
    assert.ok(firstLog.length >= 4, `the first turn wrote a few events (${firstLog.length})`);
    const afterSeq = 1;

    const stream = await openStream(server, session.id, { after: afterSeq, token: session.token });
    try {
      assert.equal(stream.ws.protocol, "subagents.v1", "the server answers the subagents.v1 subprotocol");

      // replay: exactly the events after `after`, in order
      const replay = await stream.until((got) => got.length >= firstLog.length - (afterSeq + 1), 15_000);
      assert.deepEqual(replay.slice(0, firstLog.length - (afterSeq + 1)), firstLog.slice(afterSeq + 1));

      // live: a new message's events arrive on the open socket, continuing the seq
      await sendMessage(server, session.id, "second", session.token);
      const got = await stream.until((all) => all.filter((e) => e.type === "turn/end").length >= 2, 20_000);
      const log = await allEvents(server, session.id);
      assert.deepEqual(seqs(got), range(afterSeq + 1, log.length), "no event is skipped or repeated");
      assert.deepEqual(got, log.slice(afterSeq + 1), "the stream carries exactly what the log holds");
      assert.deepEqual(assistantTexts(got), ["echo: first", "echo: second"]);
    } finally {
      stream.close();
    }
  });

  it("a standard client that authenticates with the Authorization header and offers no subprotocol connects", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const session = await createSession(server);
    await sendMessage(server, session.id, "header auth", session.token);
    const log = await waitForEvents(server, session.id, (es) => turnEnds(es).length >= 1, 20_000);
    const stream = await openStream(server, session.id, { token: session.token, auth: "header" });
    try {
      assert.equal(stream.ws.protocol, "", "no subprotocol is answered when none was offered");
      const got = await stream.until((all) => all.length >= log.length, 15_000);
      assert.deepEqual(got, log);
    } finally {
      stream.close();
    }
  });

  it("the stream from ?after=-1 (the default) replays the whole log", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const session = await createSession(server);
    await sendMessage(server, session.id, "replay me");
    const log = await waitForEvents(server, session.id, (es) => turnEnds(es).length >= 1, 20_000);
    const stream = await openStream(server, session.id);
    try {
      assert.equal(stream.ws.protocol, "subagents.v1");
      const got = await stream.until((all) => all.length >= log.length, 15_000);
      assert.deepEqual(got, log);
    } finally {
      stream.close();
    }
  });
});
