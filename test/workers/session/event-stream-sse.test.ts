import { createParser } from "eventsource-parser";
import { describe, expect, it } from "vitest";
import { type SessionEvent, SubagentsClient, type TextDelta } from "../../../src/client";
import { ADMIN, createSession, sendMessage, workerFetch } from "../../support/api";
import { subscribe, waitForTurnEnds, type WireEvent } from "../../support/logs";

/**
 * The event stream as Server-Sent Events (semantics.md §1.4): `Accept: text/event-stream` on the
 * stream route, ids are seqs, resumable with `Last-Event-ID` or `?after=`, the same events in the
 * same order as the WebSocket form; and the client SDK on either transport.
 */

interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** Opens the SSE stream and collects its messages until `close()`. */
async function openSse(
  id: string,
  options: { after?: number; lastEventId?: string; token?: string | null; deltas?: boolean } = {},
) {
  const params = new URLSearchParams();
  if (options.after !== undefined) params.set("after", String(options.after));
  if (options.deltas) params.set("deltas", "true");
  const headers = new Headers({ accept: "text/event-stream" });
  const token = options.token === undefined ? ADMIN : options.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  if (options.lastEventId !== undefined) headers.set("last-event-id", options.lastEventId);
  const query = params.size > 0 ? `?${params}` : "";
  const response = await workerFetch(
    new Request(`http://example.com/v1/sessions/${id}/events/stream${query}`, { headers }),
  );
  const messages: SseMessage[] = [];
  let comments = 0;
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
  const parser = createParser({
    onEvent: (m) => messages.push({ id: m.id, event: m.event, data: m.data }),
    onComment: () => comments++,
  });
  let done = false;
  const pump = (async () => {
    if (!reader || response.status !== 200) return;
    try {
      for (;;) {
        const { done: finished, value } = await reader.read();
        if (finished) break;
        parser.feed(value);
      }
    } catch {
      // cancelled by close()
    }
    done = true;
  })();
  return {
    response,
    messages,
    comments: () => comments,
    events: (): WireEvent[] => messages.filter((m) => m.id !== undefined).map((m) => JSON.parse(m.data)),
    async until(ok: (events: WireEvent[]) => boolean, timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      while (!ok(this.events())) {
        if (done || performance.now() > deadline)
          throw new Error(`SSE stream: got ${JSON.stringify(this.events().map((e) => e.seq))}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return this.events();
    },
    async close() {
      await reader?.cancel().catch(() => {});
      await pump;
    },
  };
}

describe("the event stream over Server-Sent Events (semantics.md §1.4)", () => {
  it("replays from ?after=, then pushes live events: ids are seqs, names are types, data the event", async () => {
    const { id } = await createSession();
    await sendMessage(id, "one");
    const first = await waitForTurnEnds(id, 1);
    const sse = await openSse(id, { after: 2 });
    expect(sse.response.status).toBe(200);
    expect(sse.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await sse.until((es) => es.length >= first.length - 3);
    expect(sse.events()).toEqual(first.slice(3));
    expect(sse.messages.map((m) => [m.id, m.event])).toEqual(
      first.slice(3).map((e) => [String(e.seq), e.type]),
    );
    await sendMessage(id, "two");
    const log = await waitForTurnEnds(id, 2);
    await sse.until((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    await new Promise((r) => setTimeout(r, 100)); // a duplicate would arrive after the last one
    expect(sse.events()).toEqual(log.slice(3));
    expect(sse.comments()).toBeGreaterThan(0); // the opening comment line
    await sse.close();
  });

  it("delivers the same events in the same order as the WebSocket form, and resumes from Last-Event-ID", async () => {
    const { id } = await createSession();
    const ws = await subscribe(id);
    const sse = await openSse(id);
    await Promise.all(["a", "b", "c"].map((c) => sendMessage(id, c)));
    const log = await waitForTurnEnds(id, 3);
    await sse.until((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    await ws.waitFor((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    expect(sse.events()).toEqual(log);
    expect(ws.received).toEqual(log);
    ws.close();
    await sse.close();

    // a reconnect names the last id it saw; Last-Event-ID wins over ?after=
    const resumed = await openSse(id, { lastEventId: "6", after: 0 });
    await resumed.until((es) => es.at(-1)?.seq === log.at(-1)!.seq);
    expect(resumed.events()).toEqual(log.slice(7));
    await resumed.close();
  });

  it("refuses a missing or wrong token and another session's token before any stream, and a bad Last-Event-ID", async () => {
    const a = await createSession();
    const b = await createSession();
    expect((await openSse(a.id, { token: null })).response.status).toBe(401);
    expect((await openSse(a.id, { token: b.token })).response.status).toBe(404);
    expect((await openSse(a.id, { token: `${a.id}.wrong-secret-wrong-secret` })).response.status).toBe(401);
    const bad = await openSse(a.id, { lastEventId: "not-a-seq" });
    expect(bad.response.status).toBe(400);
    const plain = await workerFetch(
      new Request(`http://example.com/v1/sessions/${a.id}/events/stream`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    );
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { error: { message: string } }).error.message).toBe(
      "this route needs a WebSocket upgrade or Accept: text/event-stream",
    );
  });

  it("streams a model's text deltas to an SSE subscriber that asked for them", async () => {
    const { id } = await createSession({ model: "openai:fake-model" });
    const sse = await openSse(id, { deltas: true });
    await sendMessage(id, "stream slowly over sse");
    await sse.until((es) => es.some((e) => e.type === "turn/end"));
    const deltas = sse.messages.filter((m) => m.event === "assistant/delta");
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.every((d) => d.id === undefined)).toBe(true);
    expect(deltas.map((d) => (JSON.parse(d.data) as TextDelta).text).join("")).toBe(
      "hello from fake: stream slowly over sse",
    );
    const messageAt = sse.messages.findIndex((m) => m.event === "assistant/message");
    expect(sse.messages.findLastIndex((m) => m.event === "assistant/delta")).toBeLessThan(messageAt);
    await sse.close();
  });
});

describe("the client SDK's stream over SSE", () => {
  it("yields every event once in order over SSE, across a connection the network cut", async () => {
    const { id } = await createSession();
    let responses = 0;
    // the first SSE response is cut after a few bytes of events: the stream must reconnect and resume
    const cutting: typeof fetch = async (input, init) => {
      const response = await workerFetch(new Request(input as string, init));
      if (!/text\/event-stream/.test(response.headers.get("content-type") ?? "") || responses++ > 0)
        return response;
      const reader = response.body!.getReader();
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done || sent > 400) {
            await reader.cancel().catch(() => {});
            controller.error(new TypeError("network connection lost"));
            return;
          }
          sent += value.byteLength;
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    await sendMessage(id, "before");
    await waitForTurnEnds(id, 1);
    const client = new SubagentsClient({ baseUrl: "http://example.com", token: ADMIN, fetch: cutting });
    const states: string[] = [];
    const stream = client.stream(id, { transport: "sse", minDelayMs: 10, onState: (s) => states.push(s) });
    const seen: SessionEvent[] = [];
    await sendMessage(id, "after");
    const log = await waitForTurnEnds(id, 2);
    for await (const event of stream) {
      seen.push(event);
      if (event.seq === log.at(-1)!.seq) break;
    }
    expect(seen.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    expect(seen).toEqual(log);
    expect(responses).toBeGreaterThan(1);
    expect(states).toContain("reconnecting");
  });
});
