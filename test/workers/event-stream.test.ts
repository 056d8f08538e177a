import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  allEvents,
  count,
  createSession,
  openStream,
  script,
  sendMessage,
  sessionStub,
  sleep,
  waitForTurnEnds,
  type WireEvent,
} from "./foundation-helpers";

/** A client end of the event stream that collects every event it receives. */
interface Subscriber {
  response: Response;
  received: WireEvent[];
  closed: boolean;
  waitFor(predicate: (events: WireEvent[]) => boolean, timeoutMs?: number): Promise<WireEvent[]>;
  close(): void;
}

async function subscribe(id: string, options: Parameters<typeof openStream>[1] = {}): Promise<Subscriber> {
  const response = await openStream(id, options);
  expect(response.status).toBe(101);
  const ws = response.webSocket;
  if (!ws) throw new Error("the stream answered without a WebSocket");
  const sub: Subscriber = {
    response,
    received: [],
    closed: false,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(sub.received)) {
        if (Date.now() > deadline) {
          throw new Error(`stream timed out; got seqs ${JSON.stringify(sub.received.map((e) => e.seq))}`);
        }
        await sleep(10);
      }
      return sub.received;
    },
    close() {
      ws.close(1000, "done");
    },
  };
  ws.addEventListener("message", (event) => {
    sub.received.push(JSON.parse(String(event.data)) as WireEvent);
  });
  ws.addEventListener("close", () => {
    sub.closed = true;
  });
  ws.accept();
  return sub;
}

function seqs(events: readonly WireEvent[]): number[] {
  return events.map((e) => e.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe("the WebSocket event stream replays and then pushes live events", () => {
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

    await evictDurableObject(sessionStub(id)); // hibernates the socket
    await sendMessage(id, "after the first eviction");
    await sub.waitFor((es) => count(es, "turn/end") >= 2);

    // and once more in the middle of a turn: the step re-runs in a new instance
    await sendMessage(id, script({ think: 300 }, { say: "after the second eviction" }));
    await sub.waitFor((es) => count(es, "turn/start") >= 3);
    await evictDurableObject(sessionStub(id));
    await runDurableObjectAlarm(sessionStub(id));
    const log = await waitForTurnEnds(id, 3);
    await sub.waitFor((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    await sleep(100);

    expect(seqs(sub.received)).toEqual(range(0, log.at(-1)!.seq));
    expect(sub.received).toEqual(await allEvents(id));
    expect(sub.closed).toBe(false);
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
