import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createSession, openStream, sendMessage, startRun, waitForRun } from "../../support/api";
import {
  allEvents,
  count,
  eventually,
  lifecycleEvents,
  sleep,
  subscribe,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../support/logs";
import { stub } from "../../support/objects";
import { script } from "../../support/scripts";

function seqs(events: readonly WireEvent[]): number[] {
  return events.map((e) => e.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe("the WebSocket event stream replays and then pushes live events (semantics.md §1.4)", () => {
  it("replays from ?after=<seq> and then pushes live events in order with no gap and no duplicate", async () => {
    const { id } = await createSession();
    await sendMessage(id, "one");
    const history = await waitForTurnEnds(id, 1);
    expect(history).toHaveLength(6);

    const sub = await subscribe(id, { after: 2 });
    await sub.waitFor((es) => es.length >= 3);
    expect(seqs(sub.received)).toEqual([3, 4, 5]);
    expect(sub.received).toEqual(history.slice(3));

    await sendMessage(id, "two");
    await sendMessage(id, "three");
    const log = await waitForTurnEnds(id, 3);
    const last = log.at(-1)!.seq;
    await sub.waitFor((es) => es.at(-1)?.seq === last);
    await sleep(100); // a duplicate would arrive after the last one
    expect(seqs(sub.received)).toEqual(range(3, last));
    expect(sub.received).toEqual(log.slice(3));
    expect(sub.closed).toBe(false);
    sub.close();
  });

  it("replays the whole log by default and keeps up with events appended while it replays", async () => {
    const { id } = await createSession();
    await Promise.all(["a", "b", "c"].map((c) => sendMessage(id, c)));
    // subscribe while those turns are still running
    const sub = await subscribe(id);
    const log = await waitForTurnEnds(id, 3);
    await sub.waitFor((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    await sleep(100);
    expect(seqs(sub.received)).toEqual(range(0, log.at(-1)!.seq));
    expect(sub.received).toEqual(log);
    sub.close();
  });

  it("accepts the token as a subprotocol and answers with subagents.v1", async () => {
    const { id, token } = await createSession();
    await sendMessage(id, "over a subprotocol");
    const log = await waitForTurnEnds(id, 1);

    const sub = await subscribe(id, { protocols: ["subagents.v1", `bearer.${token}`] });
    expect(sub.response.headers.get("sec-websocket-protocol")).toBe("subagents.v1");
    await sub.waitFor((es) => es.length >= log.length);
    expect(sub.received).toEqual(log);
    sub.close();

    const refused = await openStream(id, { protocols: ["subagents.v1", "bearer.not-a-valid-token"] });
    expect(refused.status).toBe(401);
    expect(refused.webSocket).toBeFalsy();
  });

  it("answers no subprotocol to a client that offered none (it authenticated with the header)", async () => {
    const { id } = await createSession();
    await sendMessage(id, "over the header");
    const log = await waitForTurnEnds(id, 1);

    const sub = await subscribe(id);
    expect(sub.response.headers.get("sec-websocket-protocol")).toBeNull();
    await sub.waitFor((es) => es.length >= log.length);
    expect(sub.received).toEqual(log);
    sub.close();
  });

  it("answers no subprotocol when the offer lacks subagents.v1 (only the token)", async () => {
    const { id, token } = await createSession();
    const sub = await subscribe(id, { protocols: [`bearer.${token}`] });
    expect(sub.response.headers.get("sec-websocket-protocol")).toBeNull();
    sub.close();
  });

  it("keeps a stream across an eviction of the session: later events arrive, none is repeated", async () => {
    const { id } = await createSession();
    await sendMessage(id, "before");
    await waitForTurnEnds(id, 1);
    const sub = await subscribe(id);
    await sub.waitFor((es) => es.length >= 6);

    await evictDurableObject(stub(id)); // hibernates the socket
    await sendMessage(id, "after the first eviction");
    await sub.waitFor((es) => count(es, "turn/end") >= 2);

    // and once more in the middle of a turn: the step re-runs in a new instance
    await sendMessage(id, script({ think: 300 }, { say: "after the second eviction" }));
    await sub.waitFor((es) => count(es, "turn/start") >= 3);
    await evictDurableObject(stub(id));
    await runDurableObjectAlarm(stub(id));
    const log = await waitForTurnEnds(id, 3);
    await sub.waitFor((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    await sleep(100);

    expect(seqs(sub.received)).toEqual(range(0, log.at(-1)!.seq));
    expect(sub.received).toEqual(await allEvents(id));
    expect(sub.closed).toBe(false);
    sub.close();
  });

  it("answers a keepalive ping with pong from the platform itself, also while the object hibernates", async () => {
    const { id } = await createSession();
    await sendMessage(id, "before");
    await waitForTurnEnds(id, 1);
    const sub = await subscribe(id);
    await sub.waitFor((es) => es.length >= 6);
    const pongs: string[] = [];
    sub.socket.addEventListener("message", (event) => {
      if (event.data === "pong") pongs.push(event.data);
    });
    sub.socket.send("ping");
    await eventually(
      async () => pongs.length,
      (n) => n === 1,
    );
    // the object never handles it (its own handler ignores client frames and sends no pong):
    // the hibernation API's automatic response does, so an evicted object is not woken for it
    await evictDurableObject(stub(id));
    sub.socket.send("ping");
    await eventually(
      async () => pongs.length,
      (n) => n === 2,
    );
    const answered = await runInDurableObject(stub(id), (_object, state) => {
      const pair = state.getWebSocketAutoResponse();
      return {
        request: pair?.request,
        response: pair?.response,
        at: state.getWebSockets().map((ws) => state.getWebSocketAutoResponseTimestamp(ws) !== null),
      };
    });
    expect(answered).toEqual({ request: "ping", response: "pong", at: [true] });
    // and the stream goes on as before
    await sendMessage(id, "after the pings");
    await sub.waitFor((es) => count(es, "turn/end") >= 2);
    expect(sub.received.filter((e) => typeof e !== "object")).toEqual([]);
    sub.close();
  });

  it("keeps pushing to one subscriber after another subscriber went away", async () => {
    const { id } = await createSession();
    const leaving = await subscribe(id);
    const staying = await subscribe(id);
    leaving.close();
    await sendMessage(id, "still delivered");
    const log = await waitForTurnEnds(id, 1);
    await staying.waitFor((es) => es.length >= log.length);
    expect(staying.received).toEqual(log);
    staying.close();
  });
});

describe("failing subscribers never affect a run (semantics.md §1.4)", () => {
  it("failing stream subscribers (closed at once, never reading, hanging up mid-run) never affect a run or a fourth subscriber that sees every event", async () => {
    const parent = await createSession();
    const closedAtOnce = await subscribe(parent.id);
    closedAtOnce.socket.close(1011, "broken subscriber");
    const neverReads = await subscribe(parent.id, { accept: false });
    const hangsUp = await subscribe(parent.id);
    hangsUp.socket.addEventListener("message", () => hangsUp.socket.close(1011, "hung up"));
    const watcher = await subscribe(parent.id);

    const first = await startRun(parent.id, {
      provider: "spawn",
      prompt: script({ think: 200 }, { say: "seen" }),
    });
    expect(first.status).toBe(201);
    expect((await waitForRun(parent.id, first.body.runId)).result).toEqual({
      output: [{ type: "text", text: "seen" }],
      stopReason: "completed",
    });
    // a second run after the broken subscribers are gone
    const second = await startRun(parent.id, { provider: "spawn", prompt: "again" });
    expect((await waitForRun(parent.id, second.body.runId)).result.stopReason).toBe("completed");

    const log = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "subagent/end").length === 2,
    );
    await watcher.waitFor((es) => es.length >= log.length);
    await sleep(100); // a duplicate would arrive after the last event
    expect(watcher.received).toEqual(log);
    expect(lifecycleEvents(watcher.received).map((e) => e.type)).toEqual([
      "subagent/start",
      "subagent/end",
      "subagent/start",
      "subagent/end",
    ]);
    expect(hangsUp.received.length).toBeLessThanOrEqual(1);
    expect(closedAtOnce.received).toEqual([]);
    neverReads.socket.accept();
    neverReads.socket.close(1000, "done");
    watcher.socket.close(1000, "done");
  });
});
