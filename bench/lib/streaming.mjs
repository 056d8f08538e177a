// Time to the first streamed token: a streaming OpenAI-compatible model server in this Node
// process (so its clock is the client's), and sessions on `openai:<model>` subscribed with
// `?deltas=true`. Per round: the model's own first token (request in -> first content chunk out,
// on the server) and the first token through the runtime (the client's POST of the message ->
// the first `assistant/delta` on its WebSocket). Their difference is what the runtime adds: the
// accept, the turn start, the model call's setup and the delta's way back through the object.
import { createServer } from "node:http";
import { summarize } from "./stats.mjs";

/** Words the model streams per answer, and the pause before each one (a token rate of the order of a real model's). */
const WORDS = 20;
const WORD_GAP_MS = 5;

/** Starts the model server; `firstChunk` maps a prompt marker to when its first word was written. */
export async function startStreamingModel() {
  const arrivals = new Map();
  const firstChunks = new Map();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const arrived = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const last = body.messages.at(-1);
      const marker = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
      arrivals.set(marker, arrived);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (choices, extra = {}) =>
        res.write(
          `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: body.model, choices, ...extra })}\n\n`,
        );
      send([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
      for (let i = 0; i < WORDS; i++) {
        await new Promise((r) => setTimeout(r, WORD_GAP_MS));
        send([{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }]);
        if (i === 0) firstChunks.set(marker, performance.now());
      }
      send([{ index: 0, delta: {}, finish_reason: "stop" }]);
      send([], { usage: { prompt_tokens: body.messages.length, completion_tokens: WORDS } });
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    /** The model's own first token for `marker`: request arrival -> first word written (ms). */
    own: (marker) => firstChunks.get(marker) - arrivals.get(marker),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** `n` rounds over `sessions` sessions on the streaming model; samples of both first-token times. */
export async function streamingRounds(admin, model, { n, warmup, sessions, budgetMs }) {
  const open = [];
  const samples = { through: [], own: [], overhead: [], answer: [] };
  try {
    for (let k = 0; k < sessions; k++) {
      const created = await admin.createSession({ label: `bench-stream-${k}`, model: "openai:bench-model" });
      open.push({ id: created.id, stream: await admin.openStream(created.id, -1, { deltas: true }) });
    }
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
      const { id, stream } = open[i % sessions];
      const marker = `stream round ${i}`;
      const t0 = performance.now();
      await admin.send(id, marker);
      await stream.next((m) => m.type === "assistant/delta", 30_000);
      const through = performance.now() - t0;
      await stream.next((m) => m.type === "assistant/message", 30_000);
      const answer = performance.now() - t0;
      if (i < warmup) continue;
      const own = model.own(marker);
      samples.through.push(through);
      samples.own.push(own);
      samples.overhead.push(through - own);
      samples.answer.push(answer);
    }
  } finally {
    for (const s of open) s.stream.close();
  }
  return {
    ...Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)])),
    words: WORDS,
    gapMs: WORD_GAP_MS,
  };
}
