// Durability across restarts of `wrangler dev` on the same persistence directory: sessions and
// their logs survive, and work accepted before a stop is finished after the restart, once.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import {
  allEvents,
  api,
  assistantTexts,
  createSession,
  range,
  sendMessage,
  seqs,
  turnEnds,
  waitForEvents,
} from "./lib/api.mjs";
import { groupMembers, randomToken, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";

const TEST_TIMEOUT_MS = 180_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("restarting wrangler dev on the same persistence directory", () => {
  /** Servers and dirs of the running test, cleaned up whatever happened. */
  const servers = [];
  const dirs = [];

  afterEach(async () => {
    const stopping = servers.splice(0);
    for (const server of stopping) await server.stop();
    for (const server of stopping)
      assert.deepEqual(groupMembers(server.pgid), [], "no process is left behind");
    for (const dir of dirs.splice(0)) removeDir(dir);
  });

  async function start(dir, token) {
    const server = await startDevServer({ persistTo: dir, token });
    servers.push(server);
    return server;
  }

  async function stop(server) {
    await server.stop();
    assert.deepEqual(groupMembers(server.pgid), [], "no wrangler or workerd process is left behind");
    servers.splice(servers.indexOf(server), 1);
  }

  it("keeps every session and its whole log, and the seq continues without a gap", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const dir = tempDir();
    dirs.push(dir);
    const token = randomToken();
    const first = await start(dir, token);

    const a = await createSession(first, { label: "a" });
    const b = await createSession(first, { label: "b" });
    await sendMessage(first, a.id, "a one", a.token);
    await waitForEvents(first, a.id, (es) => turnEnds(es).length >= 1);
    await sendMessage(first, a.id, "a two", a.token);
    await sendMessage(first, b.id, "b one", b.token);
    const logA = await waitForEvents(first, a.id, (es) => turnEnds(es).length >= 2);
    const logB = await waitForEvents(first, b.id, (es) => turnEnds(es).length >= 1);
    assert.deepEqual(assistantTexts(logA), ["echo: a one", "echo: a two"]);
    assert.deepEqual(assistantTexts(logB), ["echo: b one"]);
    const viewA = (await api(first, "GET", `/v1/sessions/${a.id}`)).body;
    const viewB = (await api(first, "GET", `/v1/sessions/${b.id}`)).body;

    await stop(first);
    const second = await start(dir, token);

    // the same sessions, the same logs (same events, same seqs), and the session tokens still work
    assert.deepEqual(await allEvents(second, a.id, a.token), logA);
    assert.deepEqual(await allEvents(second, b.id, b.token), logB);
    const againA = await api(second, "GET", `/v1/sessions/${a.id}`, { token: a.token });
    const againB = await api(second, "GET", `/v1/sessions/${b.id}`, { token: b.token });
    assert.equal(againA.status, 200);
    assert.equal(againB.status, 200);
    for (const [before, after] of [
      [viewA, againA.body],
      [viewB, againB.body],
    ]) {
      assert.equal(after.id, before.id);
      assert.equal(after.createdAt, before.createdAt);
      assert.equal(after.label, before.label);
    }

    // it still answers, and the seq continues where it stopped
    await sendMessage(second, a.id, "a three", a.token);
    const grown = await waitForEvents(second, a.id, (es) => turnEnds(es).length >= 3);
    assert.deepEqual(grown.slice(0, logA.length), logA, "the old log is unchanged");
    assert.deepEqual(seqs(grown), range(0, grown.length), "seq is contiguous across the restart");
    assert.ok(grown.length > logA.length);
    assert.equal(grown[logA.length].seq, logA.length, "the first new event takes the next seq");
    assert.deepEqual(assistantTexts(grown), ["echo: a one", "echo: a two", "echo: a three"]);
    assert.deepEqual(
      turnEnds(grown).map((e) => e.data),
      [1, 2, 3].map((turn) => ({ turn, reason: "completed" })),
    );
  });

  it("a message accepted just before the stop is answered after the restart exactly once", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const dir = tempDir();
    dirs.push(dir);
    const token = randomToken();
    const first = await start(dir, token);

    const session = await createSession(first);
    const script = JSON.stringify({ script: [{ think: 3000 }, { say: "late" }] });
    const accepted = await api(first, "POST", `/v1/sessions/${session.id}/messages`, {
      body: { content: script },
    });
    assert.equal(accepted.status, 202);
    // the turn has started and the model is thinking (3 s): stop the server now
    const thinking = await waitForEvents(
      first,
      session.id,
      (es) => es.some((e) => e.type === "user/message"),
      5_000,
    );
    assert.equal(turnEnds(thinking).length, 0, "the turn is still open when the server stops");
    await stop(first);

    const second = await start(dir, token);
    const afterRestart = await allEvents(second, session.id);
    assert.deepEqual(
      assistantTexts(afterRestart),
      [],
      "nothing was answered before the stop (else this test would not exercise the restart)",
    );
    assert.deepEqual(
      afterRestart.slice(0, thinking.length),
      thinking,
      "the accepted message survived the stop",
    );
    const answered = await waitForEvents(second, session.id, (es) => turnEnds(es).length >= 1, 60_000);
    // Give a duplicate run (in-process driver and alarm, or a replayed step) time to show up.
    await sleep(5_000);
    const log = await allEvents(second, session.id);
    const texts = assistantTexts(log);
    assert.deepEqual(texts, ["late"], `exactly one answer; log: ${JSON.stringify(log.map((e) => e.type))}`);
    const ends = turnEnds(log);
    assert.deepEqual(
      ends.map((e) => e.data),
      [{ turn: 1, reason: "completed" }],
      "exactly one turn/end for that turn",
    );
    assert.equal(log.filter((e) => e.type === "turn/start").length, 1, "the turn started once");
    assert.equal(log.filter((e) => e.type === "user/message").length, 1, "the message was claimed once");
    assert.equal(log.filter((e) => e.type === "user/message")[0].data.messageId, accepted.body.messageId);
    assert.deepEqual(seqs(log), range(0, log.length), "seq is contiguous");
    assert.deepEqual(log.slice(0, answered.length), answered);
  });
});
