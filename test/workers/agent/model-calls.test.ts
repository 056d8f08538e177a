import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, createSession, startRun, waitForRun } from "../../support/api";
import { type FakeRequest, fakeRequests, fakeRequestsMentioning } from "../../support/fake-openai";
import { allEvents, assistantTexts, subscribe, waitForEvents, type WireEvent } from "../../support/logs";
import { faults, never, removeAllFaults } from "../../support/faults";
import { stub } from "../../support/objects";

/**
 * Model calls in production conditions, through a session against the real OpenAI-compatible
 * server of the tests (test/setup/openai-server.ts): streaming to subscribers, retries of 503 and
 * 429 (honouring Retry-After), a call timeout, the durable attempt budget across restarts, and
 * sampling parameters with their inheritance.
 */

const MODEL = "openai:fake-model";

afterEach(() => removeAllFaults());

function unique(text: string): string {
  return `${text} ${crypto.randomUUID().slice(0, 8)}`;
}

async function send(id: string, content: string): Promise<void> {
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
}

async function turnEnd(id: string, turn = 1): Promise<WireEvent> {
  const events = await waitForEvents(
    id,
    (es) => es.some((e) => e.type === "turn/end" && e.data.turn === turn),
    { timeoutMs: 20_000, what: `the end of turn ${turn}` },
  );
  return events.find((e) => e.type === "turn/end" && e.data.turn === turn)!;
}

describe("streaming model steps reach subscribers while the log keeps one message per step", () => {
  it("sends live assistant/delta messages before the step's assistant/message, only to subscribers that asked", async () => {
    const { id } = await createSession({ model: MODEL });
    const live = await subscribe(id, { deltas: true });
    const plain = await subscribe(id);
    const text = unique("stream slowly one two three four");
    await send(id, text);
    expect((await turnEnd(id)).data.reason).toBe("completed");
    const answer = `hello from fake: ${text}`;
    await live.waitFor((ms) => ms.some((m) => m.type === "turn/end"));
    await plain.waitFor((ms) => ms.some((m) => m.type === "turn/end"));

    const messageAt = live.received.findIndex((m) => m.type === "assistant/message");
    const deltas = live.received.filter((m) => (m.type as string) === "assistant/delta") as unknown as {
      seq?: number;
      turn: number;
      step: number;
      attempt: number;
      text: string;
    }[];
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => d.text).join("")).toBe(answer);
    expect(deltas.every((d) => d.seq === undefined && d.turn === 1 && d.step === 0 && d.attempt === 1)).toBe(
      true,
    );
    // every delta came before the durable message of its step
    const lastDeltaAt = live.received.findLastIndex((m) => (m.type as string) === "assistant/delta");
    expect(lastDeltaAt).toBeLessThan(messageAt);

    // the subscriber that did not ask, and the log, have the message only
    expect(plain.received.some((m) => (m.type as string) === "assistant/delta")).toBe(false);
    const log = await allEvents(id);
    expect(log.some((e) => (e.type as string) === "assistant/delta")).toBe(false);
    expect(assistantTexts(log)).toEqual([answer]);
    expect(plain.received.filter((m) => m.type === "assistant/message")).toEqual(
      log.filter((e) => e.type === "assistant/message"),
    );
    // the model was asked to stream
    const [request] = await fakeRequestsMentioning(text);
    expect(request!.body.stream).toBe(true);
    live.close();
    plain.close();
  });
});

describe("a failing model call is retried within the step's budget (semantics.md §2.7)", () => {
  it("retries a 503 at once (Retry-After: 0) and answers", async () => {
    const { id } = await createSession({ model: MODEL });
    const text = unique("flaky");
    await send(id, text);
    expect((await turnEnd(id)).data.reason).toBe("completed");
    const requests = await fakeRequestsMentioning(text);
    expect(requests.map((r) => r.status)).toEqual([503, 200]);
    expect(assistantTexts(await allEvents(id))).toEqual([`hello from fake: ${text}`]);
  });

  it("waits out a 429's Retry-After before the next attempt", async () => {
    const { id } = await createSession({ model: MODEL });
    const text = unique("rate limited");
    await send(id, text);
    expect((await turnEnd(id)).data.reason).toBe("completed");
    const [limited, answered] = (await fakeRequestsMentioning(text)) as [FakeRequest, FakeRequest];
    expect([limited.status, answered.status]).toEqual([429, 200]);
    // Retry-After: 1 (the clocks are the same machine's; a little slack for rounding)
    expect(answered.at - limited.at).toBeGreaterThanOrEqual(950);
  });

  it("times out a call that never answers (MODEL_TIMEOUT_SECONDS) and retries it", async () => {
    const { id } = await createSession({ model: MODEL });
    const text = unique("hang once");
    await send(id, text);
    expect((await turnEnd(id)).data.reason).toBe("completed");
    const requests = await fakeRequestsMentioning(text);
    expect(requests.map((r) => r.status)).toEqual([-1, 200]);
    expect(assistantTexts(await allEvents(id))).toEqual([`hello from fake: ${text}`]);
  });

  it("an object that restarts during every call ends the turn after MODEL_ATTEMPTS_PER_STEP calls, never more", async () => {
    const { id } = await createSession({ model: MODEL });
    // every model call of this session holds the object mid-call (after its attempt was claimed);
    // the test resets the object there (`ctx.abort()`: a crash) and wakes it with a read
    const plan = faults(id, (point) => (point === "before-model" ? never() : undefined));
    await send(id, "crash while you think");
    for (let call = 1; call <= 4; call++) {
      await plan.reached("before-model", call, 8_000);
      await crash(id);
      // the new instance's alarm re-runs the step (not awaited: it holds at the next call)
      void runDurableObjectAlarm(stub(id)).catch(() => {});
    }
    const end = await turnEnd(id);
    expect(end.data).toEqual({
      turn: 1,
      reason: "error",
      error: "the model step failed 4 times (the object restarted during each call)",
    });
    // no fifth call, also after more wake-ups
    await runDurableObjectAlarm(stub(id));
    await api("GET", `/v1/sessions/${id}`);
    expect(plan.count("before-model")).toBe(4);
    // the session goes on with the next message
    plan.remove();
    await send(id, "after the loop");
    expect((await turnEnd(id, 2)).data.reason).toBe("completed");
  });
});

/** Resets the object at once, its in-flight work dying with it (storage stays). */
async function crash(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) => {
    state.abort("crashed by the test");
  }).catch(() => {});
}

describe("sampling parameters (semantics.md §2.7)", () => {
  it("sends a session's temperature and maxOutputTokens; a child inherits them unless its start says otherwise", async () => {
    const { id } = await createSession({ model: MODEL, temperature: 0.3, maxOutputTokens: 77 });
    const mine = unique("params of the parent");
    await send(id, mine);
    await turnEnd(id);
    const [parentCall] = await fakeRequestsMentioning(mine);
    expect([parentCall!.body.temperature, parentCall!.body.max_tokens]).toEqual([0.3, 77]);

    const inherited = unique("params of a child");
    const child = await startRun(id, { provider: "spawn", prompt: inherited, mode: "one-shot" });
    expect(child.status).toBe(201);
    await waitForRun(id, (child.body as { runId: string }).runId);
    const [childCall] = await fakeRequestsMentioning(inherited);
    expect([childCall!.body.temperature, childCall!.body.max_tokens]).toEqual([0.3, 77]);

    const overridden = unique("params overridden");
    const other = await startRun(id, {
      provider: "spawn",
      prompt: overridden,
      mode: "one-shot",
      temperature: 1.5,
    });
    expect(other.status).toBe(201);
    await waitForRun(id, (other.body as { runId: string }).runId);
    const [otherCall] = await fakeRequestsMentioning(overridden);
    expect([otherCall!.body.temperature, otherCall!.body.max_tokens]).toEqual([1.5, 77]);
  });

  it("refuses out-of-range parameters and stores nothing", async () => {
    const before = (await fakeRequests()).count;
    const hot = await api("POST", "/v1/sessions", { body: { model: MODEL, temperature: 3 } });
    expect(hot.status).toBe(400);
    expect((hot.body as { error: { code: string } }).error.code).toBe("INVALID_REQUEST");
    const zero = await api("POST", "/v1/sessions", { body: { model: MODEL, maxOutputTokens: 0 } });
    expect(zero.status).toBe(400);
    expect((await fakeRequests()).count).toBe(before);
  });
});
