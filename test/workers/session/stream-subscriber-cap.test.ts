import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_SUBSCRIBERS, subscriberCap } from "../../../durable-objects/kernel/subscribers";
import { ADMIN, createSession, openStream, sendMessage, workerFetch } from "../../support/api";
import { sleep, subscribe, type Subscriber, waitForTurnEnds } from "../../support/logs";
import { evict } from "../../support/objects";

/**
 * The cap on event-stream subscribers per session (README, Security and limits: "Streams"): MAX_SUBSCRIBERS_PER_SESSION
 * (32 in wrangler.toml, 32 when unset). The attack: one token opening subscriber after subscriber
 * on one session, each a replay of its log held by the session's object. At the cap a subscriber
 * of either kind is accepted; one past it is `429 TOO_MANY_SUBSCRIBERS` with `Retry-After`, over
 * WebSocket and SSE alike, before anything is replayed. A subscriber that closes frees its slot;
 * a hibernated socket keeps it.
 */

const CAP = 32;

/** Opens the SSE form; the response stays open (unread) until `cancel()`. */
async function openSse(id: string): Promise<Response> {
  return workerFetch(
    new Request(`http://example.com/v1/sessions/${id}/events/stream`, {
      headers: { authorization: `Bearer ${ADMIN}`, accept: "text/event-stream" },
    }),
  );
}

/** An SSE subscriber that is open: its response is 200 and its body unread. */
async function sseSubscriber(id: string): Promise<Response> {
  const response = await openSse(id);
  expect(response.status).toBe(200);
  return response;
}

/** The refusal past the cap: 429, the code, Retry-After, and no stream of any kind. */
async function expectRefused(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.webSocket ?? null).toBeNull();
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
  const body = (await response.json()) as { error: { code: string } };
  expect(body.error.code).toBe("TOO_MANY_SUBSCRIBERS");
}

/** Retries `open` until it is accepted (a freed slot is released as its close is processed). */
async function acceptedWithin<T>(open: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const opened = await open();
    if (opened !== undefined) return opened;
    if (performance.now() > deadline) throw new Error("no slot was freed");
    await sleep(20);
  }
}

/** An accepted WebSocket subscriber if there is a slot, else undefined (the refusal checked). */
async function tryWebSocket(id: string): Promise<{ close(): void } | undefined> {
  const response = await openStream(id);
  if (response.status !== 101) {
    await expectRefused(response);
    return undefined;
  }
  const socket = response.webSocket!;
  socket.accept();
  return { close: () => socket.close(1000, "done") };
}

describe("the cap on stream subscribers per session (README, Security and limits: Streams)", () => {
  it("defaults to 32 when MAX_SUBSCRIBERS_PER_SESSION is unset or not a positive integer", () => {
    expect(env.MAX_SUBSCRIBERS_PER_SESSION).toBe(String(CAP));
    expect(DEFAULT_MAX_SUBSCRIBERS).toBe(32);
    for (const unset of [undefined, "", " ", "0", "-3", "2.5", "many"]) expect(subscriberCap(unset)).toBe(32);
    expect(subscriberCap("5")).toBe(5);
  });

  it("accepts the 32nd subscriber of either kind and refuses the 33rd with 429 over WebSocket and SSE", async () => {
    const { id } = await createSession();
    await sendMessage(id, "a log to replay");
    await waitForTurnEnds(id, 1);
    const sockets: Subscriber[] = [];
    const streams: Response[] = [];
    for (let i = 0; i < CAP / 2; i++) sockets.push(await subscribe(id));
    for (let i = 0; i < CAP / 2 - 1; i++) streams.push(await sseSubscriber(id));
    // the 32nd is a WebSocket, and it gets its replay
    const last = await subscribe(id);
    await last.waitFor((events) => events.length === 6);
    await expectRefused(await openStream(id));
    await expectRefused(await openSse(id));

    // with one socket gone, the 32nd is an SSE stream; the 33rd is refused again
    last.close();
    const sse = await acceptedWithin(async () => {
      const response = await openSse(id);
      if (response.status === 200) return response;
      await expectRefused(response);
      return undefined;
    });
    streams.push(sse);
    await expectRefused(await openSse(id));
    await expectRefused(await openStream(id));

    for (const socket of sockets) socket.close();
    for (const stream of streams) await stream.body?.cancel();
  });

  it("frees a slot when a subscriber closes: a socket's close, an SSE reader's cancel", async () => {
    const { id } = await createSession();
    const sockets: { close(): void }[] = [];
    const streams: Response[] = [];
    for (let i = 0; i < CAP - 2; i++) sockets.push(await subscribe(id));
    for (let i = 0; i < 2; i++) streams.push(await sseSubscriber(id));
    await expectRefused(await openStream(id));

    // an SSE reader that cancels its response frees its slot
    await streams.pop()!.body?.cancel();
    const socket = await acceptedWithin(() => tryWebSocket(id));
    sockets.push(socket);
    await expectRefused(await openSse(id));

    // a socket its client closes frees its slot
    sockets.shift()!.close();
    streams.push(
      await acceptedWithin(async () => {
        const response = await openSse(id);
        if (response.status === 200) return response;
        await expectRefused(response);
        return undefined;
      }),
    );
    await expectRefused(await openStream(id));

    for (const s of sockets) s.close();
    for (const stream of streams) await stream.body?.cancel();
  });

  it("counts hibernated sockets: after an eviction the cap still holds, and a close still frees a slot", async () => {
    const { id } = await createSession();
    const sockets: { close(): void }[] = [];
    for (let i = 0; i < CAP - 1; i++) sockets.push(await subscribe(id));
    const watcher = await subscribe(id);
    await evict(id); // the sockets hibernate; the object's memory is gone
    await expectRefused(await openStream(id));
    await expectRefused(await openSse(id));
    // the hibernated sockets still get live events
    await sendMessage(id, "after the eviction");
    await watcher.waitFor((events) => events.some((e) => e.type === "turn/end"));

    sockets.shift()!.close();
    sockets.push(await acceptedWithin(() => tryWebSocket(id)));
    await expectRefused(await openStream(id));
    for (const s of [...sockets, watcher]) s.close();
  });
});
