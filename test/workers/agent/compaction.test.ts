import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  rpc,
  startChild,
  startRun,
  view,
  waitForRun,
} from "../../support/api";
import { type FakeRequest, fakeRequests } from "../../support/fake-openai";
import { faults, never, removeAllFaults } from "../../support/faults";
import { allEvents, ofType, textOf, userTexts, waitForEvents, type WireEvent } from "../../support/logs";
import { evict, specOf, stub } from "../../support/objects";

/**
 * Compaction (README "Long sessions"): the model's view is the latest summary plus the turns after
 * its boundary, compacted by threshold, on a refused request and on request; the log keeps every
 * event. Driven through `scripted` and through `openai:` against the tests' OpenAI-compatible
 * server, whose `ctx-<N>` models refuse requests over N tokens exactly as OpenAI does.
 */

afterEach(() => removeAllFaults());

async function send(id: string, content: string): Promise<void> {
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
}

/** Sends one message and waits for its turn to end; answers the turn's `turn/end`. */
async function turn(id: string, content: string): Promise<WireEvent> {
  const ends = ofType(await allEvents(id), "turn/end").length;
  await send(id, content);
  const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length > ends, { timeoutMs: 30_000 });
  return ofType(events, "turn/end")[ends]!;
}

/** The chat-completions requests that mention `marker`, since request `from`. */
async function requestsWith(marker: string, from = 0): Promise<FakeRequest[]> {
  return (await fakeRequests(from)).requests.filter((r) => JSON.stringify(r.body).includes(marker));
}

function messagesOf(request: FakeRequest): { role: string; content: string }[] {
  const body = request.body as { messages: { role: string; content: unknown }[] };
  return body.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === "string" ? m.content : textOf(m.content),
  }));
}

const isSummaryRequest = (r: FakeRequest): boolean =>
  /compact the conversation/i.test(messagesOf(r)[0]?.content ?? "");

describe("compaction on request", () => {
  it("POST …/compact on an idle session writes one compaction at once, starts no turn, and the log keeps everything", async () => {
    const { id } = await createSession({ model: "scripted" });
    const long = " and more".repeat(100);
    for (const text of ["first question", "second question", "third question"]) await turn(id, text + long);
    const before = await allEvents(id);

    const res = await api("POST", `/v1/sessions/${id}/compact`);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: true });
    const events = await waitForEvents(id, (es) => ofType(es, "context/compacted").length > 0);
    const [compaction, ...more] = ofType(events, "context/compacted");
    expect(more).toEqual([]);

    // the newest turn stays verbatim: the summary replaces the first two, through the second answer
    const answers = ofType(before, "assistant/message");
    const data = compaction!.data as Record<string, unknown>;
    expect(data).toMatchObject({ throughSeq: answers[1]!.seq, trigger: "request" });
    expect(data.summary).toMatch(
      /^scripted summary of \d+ characters: "\[user\] first question and more .*" … ".*and more"$/,
    );
    expect(data.tokensAfter).toBeLessThan(data.tokensBefore as number);
    expect(Number.isInteger(data.tokensBefore) && Number.isInteger(data.tokensAfter)).toBe(true);
    // no turn started for it, and every earlier event is still there, unchanged
    expect(ofType(events, "turn/start")).toHaveLength(3);
    expect(events.slice(0, before.length)).toEqual(before);
    expect((await view(id)).status).toBe("idle");

    // a later compaction folds the earlier summary in
    await turn(id, "fourth question");
    await api("POST", `/v1/sessions/${id}/compact`);
    const again = ofType(
      await waitForEvents(id, (es) => ofType(es, "context/compacted").length > 1),
      "context/compacted",
    );
    expect(again[1]!.data).toMatchObject({ trigger: "request" });
    expect((again[1]!.data as { summary: string }).summary).toMatch(
      /^scripted summary of \d+ characters: "\[earlier summary\] scripted summary of/,
    );
  });

  it("takes an empty body or {}, refuses anything else, and needs the session's token or an ancestor's", async () => {
    const { id, token } = await createSession({ model: "scripted", contextWindow: 64_000 });
    expect((await api("POST", `/v1/sessions/${id}/compact`, { body: {} })).status).toBe(202);
    expect((await api("POST", `/v1/sessions/${id}/compact`, { body: {}, token })).status).toBe(202);
    expectError(
      await api("POST", `/v1/sessions/${id}/compact`, { body: { now: true } }),
      400,
      "INVALID_REQUEST",
    );
    const other = await createSession({ model: "scripted" });
    expectError(await api("POST", `/v1/sessions/${id}/compact`, { token: other.token }), 404, "NOT_FOUND");
    // a session with one turn has nothing older than the turn it keeps: the request is answered, nothing is written
    // a child inherits the window; its tree's token and the RPC entrypoint may ask too
    const inherited = await startRun(id, { provider: "spawn", prompt: "child question" });
    expect((await specOf(id, inherited.body.id)).options.contextWindow).toBe(64_000);
    const own = await startRun(id, { provider: "spawn", prompt: "child question", contextWindow: 8_000 });
    expect((await specOf(id, own.body.id)).options.contextWindow).toBe(8_000);
    const { childId } = await startChild(id, { prompt: "child question" });
    expect((await api("POST", `/v1/sessions/${childId}/compact`, { token })).status).toBe(202);
    expect(await rpc.compact(childId)).toEqual({ accepted: true });
    const single = await createSession({ model: "scripted" });
    await turn(single.id, "only question");
    await api("POST", `/v1/sessions/${single.id}/compact`);
    await runDurableObjectAlarm(stub(single.id));
    expect(ofType(await allEvents(single.id), "context/compacted")).toEqual([]);
  });
});

describe("compaction through an OpenAI-compatible server with a context limit", () => {
  it("a spent token budget pays for no summary: a requested compaction is given up without a model call", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const { id } = await createSession({ model: "openai:fake-model", budget: { tokens: 1 } });
    for (const n of [1, 2, 3]) await turn(id, `${marker} ${n}`);
    const from = (await fakeRequests()).count;
    expect((await api("POST", `/v1/sessions/${id}/compact`)).status).toBe(202);
    await runDurableObjectAlarm(stub(id));
    expect(ofType(await allEvents(id), "context/compacted")).toEqual([]);
    expect(
      (await fakeRequests(from)).requests
        .filter(isSummaryRequest)
        .filter((r) => JSON.stringify(r.body).includes(marker)),
    ).toEqual([]);
    // the request is given up, not left owed
    await runDurableObjectAlarm(stub(id));
    expect((await requestsWith(marker, from)).length).toBe(0);
  });

  it("a 2,000-token window answers 50 follow-ups of 1,000 characters; the log keeps them all, later requests carry the summary, not the early turns", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const from = (await fakeRequests()).count;
    const { id } = await createSession({
      model: "openai:ctx-2000",
      contextWindow: 2000,
      budget: { tokens: 10_000_000 },
    });
    const texts = Array.from(
      { length: 50 },
      (_, i) => `${marker} ${i} ${"x".repeat(1000 - marker.length - 4 - String(i).length)}`,
    );
    for (const text of texts) expect((await turn(id, text)).data.reason).toBe("completed");

    const events = await allEvents(id);
    expect(userTexts(events)).toEqual(texts);
    expect(ofType(events, "assistant/message")).toHaveLength(50);
    const compactions = ofType(events, "context/compacted");
    expect(compactions.length).toBeGreaterThan(5);
    for (const c of compactions) expect((c.data as { trigger: string }).trigger).toBe("threshold");

    const requests = await requestsWith(marker, from);
    const refused = requests.filter((r) => r.status === 400);
    expect(refused.length).toBeLessThanOrEqual(1);
    expect(requests.filter((r) => r.status !== 200 && r.status !== 400)).toEqual([]);
    // the last step's request: the summary first, then only recent turns, never the first one
    const last = messagesOf(requests.filter((r) => !isSummaryRequest(r)).at(-1)!);
    expect(last[0]!.content).toMatch(/^Summary of the earlier conversation/);
    expect(last.some((m) => m.content.includes(`${marker} 0 `))).toBe(false);
    expect(last.some((m) => m.content.includes(`${marker} 49 `))).toBe(true);
    // the summarizing calls' usage counts as the session's, and is shown apart
    const session = await view(id);
    expect(session.compactionUsage.inputTokens).toBeGreaterThan(0);
    expect(session.usage.inputTokens).toBeGreaterThan(session.compactionUsage.inputTokens);
    expect(session.budget.used).toBe(session.usage.inputTokens + session.usage.outputTokens);
    const summed = compactions.reduce(
      (n, c) => n + (c.data as { usage: { inputTokens: number } }).usage.inputTokens,
      0,
    );
    expect(session.compactionUsage.inputTokens).toBe(summed);
  }, 120_000);

  it("a window set too large overflows: the refused step compacts and runs again once, and the turn completes", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const from = (await fakeRequests()).count;
    const { id } = await createSession({ model: "openai:ctx-2000", contextWindow: 100_000 });
    let i = 0;
    while (ofType(await allEvents(id), "context/compacted").length === 0 && i < 20)
      expect((await turn(id, `${marker} ${i++} ${"y".repeat(900)}`)).data.reason).toBe("completed");
    const [compaction] = ofType(await allEvents(id), "context/compacted");
    expect(compaction!.data).toMatchObject({ trigger: "overflow" });
    // one refusal, one summarizing call, the step again: answered
    const requests = await requestsWith(marker, from);
    const refusedAt = requests.findIndex((r) => r.status === 400);
    expect(requests.slice(refusedAt).map((r) => [r.status, isSummaryRequest(r)])).toEqual([
      [400, false],
      [200, true],
      [200, false],
    ]);
    expect(JSON.stringify(requests[refusedAt]!.body)).toContain(`${marker} ${i - 1} `);
    // the model stated its window: the next steps are kept within it, never refused again
    for (let n = 0; n < 5; n++)
      expect((await turn(id, `${marker} more ${n} ${"y".repeat(900)}`)).data.reason).toBe("completed");
    expect((await requestsWith(marker, from)).filter((r) => r.status === 400)).toHaveLength(1);
  }, 120_000);

  it("a message too large even after a compaction ends its turn CONTEXT_OVERFLOW, boundedly; the next message is answered", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const from = (await fakeRequests()).count;
    // a model whose refusal does not state its window, behind a window set far too large
    const { id } = await createSession({ model: "openai:ctxq-2000", contextWindow: 100_000 });
    expect((await turn(id, `${marker} small`)).data.reason).toBe("completed");
    const end = await turn(id, `${marker} huge ${"z".repeat(40_000)}`);
    expect(end.data).toMatchObject({ reason: "error", code: "CONTEXT_OVERFLOW" });
    expect((end.data as { error: string }).error).toMatch(/^CONTEXT_OVERFLOW: .*even after a compaction/);
    const steps = (await requestsWith(`${marker} huge`, from)).filter((r) => !isSummaryRequest(r));
    expect(steps.map((r) => r.status)).toEqual([400, 400]);

    // the oversized turn is cut in later views (its turn ended CONTEXT_OVERFLOW), then summarized
    const after = await turn(id, `${marker} after`);
    const events = await allEvents(id);
    expect(textOf((ofType(events, "user/message")[1]!.data as { content: unknown }).content)).toHaveLength(
      `${marker} huge `.length + 40_000,
    );
    expect(after.data).toMatchObject({ reason: "completed" });
  }, 60_000);
});

describe("the view across the object's life", () => {
  it("sends a message over a quarter of the window cut, with a marker; the log keeps it whole", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const from = (await fakeRequests()).count;
    const { id } = await createSession({ model: "openai:ctx-4000", contextWindow: 4000 });
    const big = `${marker} ${"w".repeat(30_000)}`;
    expect((await turn(id, big)).data.reason).toBe("completed");
    const [request] = await requestsWith(marker, from);
    const sent = messagesOf(request!).find((m) => m.content.startsWith(marker))!;
    expect(sent.content.length).toBeLessThanOrEqual(4000);
    expect(sent.content).toMatch(/\[… \d+ characters cut here; the session's log keeps the whole text\]$/);
    expect(userTexts(await allEvents(id))).toEqual([big]);
  });

  it("a cold object rebuilds the view from its latest compaction", async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`;
    const { id } = await createSession({ model: "openai:fake-model" });
    for (const n of [1, 2, 3]) await turn(id, `${marker} turn ${n}`);
    await api("POST", `/v1/sessions/${id}/compact`);
    await waitForEvents(id, (es) => ofType(es, "context/compacted").length === 1);
    await evict(id);
    const from = (await fakeRequests()).count;
    await turn(id, `${marker} turn 4`);
    const [request] = (await requestsWith(`${marker} turn 4`, from)).filter((r) => !isSummaryRequest(r));
    const contents = messagesOf(request!).map((m) => m.content);
    expect(contents[0]).toMatch(/^Summary of the earlier conversation/);
    expect(contents.some((c) => c === `${marker} turn 1`)).toBe(false);
    expect(contents.filter((c) => c.startsWith(marker))).toEqual([`${marker} turn 3`, `${marker} turn 4`]);
  });

  it("a crash during the summarizing call writes no compaction; the call runs again and the answer comes", async () => {
    // the tools alone pass this window's threshold: from the third turn on, every step compacts first
    const { id } = await createSession({ model: "scripted", contextWindow: 1000 });
    await turn(id, "one");
    await turn(id, "two");
    const plan = faults(id, (point, n) => (point === "after-compact" && n === 1 ? never() : undefined));
    await send(id, "three");
    await plan.reached("after-compact", 1, 8_000);
    await crash(id);
    void runDurableObjectAlarm(stub(id)).catch(() => {});
    const events = await waitForEvents(id, (es) => ofType(es, "turn/end").length === 3, {
      timeoutMs: 20_000,
    });
    expect(ofType(events, "turn/end").map((e) => (e.data as { reason: string }).reason)).toEqual([
      "completed",
      "completed",
      "completed",
    ]);
    expect(plan.count("before-compact")).toBe(2);
    const compactions = ofType(events, "context/compacted");
    expect(compactions).toHaveLength(1);
    expect(compactions[0]!.data).toMatchObject({
      trigger: "threshold",
      throughSeq: ofType(events, "assistant/message")[0]!.seq,
    });
  });

  it("a fork after a compaction is seeded with the parent's view: the summary, then the turns after it", async () => {
    const { id } = await createSession({ model: "scripted" });
    for (const text of ["alpha", "beta", "gamma"]) await turn(id, text);
    await api("POST", `/v1/sessions/${id}/compact`);
    const [compaction] = ofType(
      await waitForEvents(id, (es) => ofType(es, "context/compacted").length === 1),
      "context/compacted",
    );
    const started = await startRun(id, { provider: "fork", prompt: "delta" });
    expect(started.status).toBe(201);
    const run = await waitForRun(id, started.body.runId);
    const child = await allEvents(run.childId ?? run.id);
    expect(child[0]).toMatchObject({
      type: "context/compacted",
      data: { ...compaction!.data, throughSeq: -1 },
    });
    expect(userTexts(child)).toEqual(["gamma", "delta"]);
    expect(ofType(child, "turn/start").map((e) => (e.data as { turn: number }).turn)).toEqual([3, 4]);
  });
});

/** Resets the object at once, its in-flight work dying with it (storage stays). */
async function crash(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) => {
    state.abort("crashed by the test");
  }).catch(() => {});
}
