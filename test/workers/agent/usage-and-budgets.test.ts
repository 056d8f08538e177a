import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { fakeRequestsMentioning } from "../../support/fake-openai";
import { allEvents, waitForEvents, type WireEvent } from "../../support/logs";

/**
 * Token usage (semantics.md §8): per assistant message, summed per turn, carried in run results
 * and `subagent/end`, rolled up per subtree in the descendants listing; and token budgets, shared
 * down to children, that end a turn with BUDGET_EXCEEDED when a model call's reservation does not fit. The tests'
 * OpenAI-compatible server reports `prompt_tokens` = the number of messages and
 * `completion_tokens` = the words of its answer.
 */

const MODEL = "openai:fake-model";

async function turn(id: string, content: string, turnNumber = 1): Promise<WireEvent[]> {
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
  return waitForEvents(id, (es) => es.some((e) => e.type === "turn/end" && e.data.turn === turnNumber), {
    what: `turn ${turnNumber}`,
  });
}

function ofTurn(events: WireEvent[], type: string, turnNumber: number): WireEvent[] {
  const start = events.findIndex((e) => e.type === "turn/start" && e.data.turn === turnNumber);
  const end = events.findIndex((e) => e.type === "turn/end" && e.data.turn === turnNumber);
  return events.slice(start, end + 1).filter((e) => e.type === type);
}

async function oneShot(parent: string, prompt: string): Promise<{ runId: string; id: string; result: any }> {
  const started = await api("POST", `/v1/sessions/${parent}/subagents`, {
    body: { provider: "spawn", mode: "one-shot", prompt, model: MODEL },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const { runId, id } = started.body as { runId: string; id: string };
  const run = await api("GET", `/v1/sessions/${parent}/runs/${runId}?wait=15000`);
  expect((run.body as { state: string }).state).toBe("settled");
  return { runId, id, result: (run.body as { result: unknown }).result };
}

describe("token usage is summed per turn, per session and per run (semantics.md §8)", () => {
  it("sums a turn's steps into its turn/end and the session's lifetime total into its view", async () => {
    const { id } = await createSession({ model: MODEL });
    const first = await turn(id, "use the tool");
    const steps = ofTurn(first, "assistant/message", 1).map((e) => e.data.usage);
    expect(steps).toEqual([
      { inputTokens: 1, outputTokens: 0 },
      { inputTokens: 3, outputTokens: 3 },
    ]);
    expect(ofTurn(first, "turn/end", 1)[0]!.data.usage).toEqual({ inputTokens: 4, outputTokens: 3 });
    const second = await turn(id, "and again", 2);
    const secondUsage = ofTurn(second, "turn/end", 2)[0]!.data.usage;
    expect(secondUsage.outputTokens).toBe(5); // "hello from fake: and again"
    const view = await api("GET", `/v1/sessions/${id}`);
    expect((view.body as { usage: unknown }).usage).toEqual({
      inputTokens: 4 + secondUsage.inputTokens,
      outputTokens: 3 + 5,
    });
  });

  it("carries a child's usage in its run result and the parent's subagent/end", async () => {
    const { id } = await createSession({ model: MODEL });
    const { runId, result } = await oneShot(id, "count my tokens");
    expect(result.usage).toEqual({ inputTokens: 1, outputTokens: 6 }); // "hello from fake: count my tokens"
    const end = (await allEvents(id)).find((e) => e.type === "subagent/end" && e.data.runId === runId)!;
    expect(end.data.usage).toEqual(result.usage);
  });

  it("rolls usage up per subtree in the descendants listing", async () => {
    const { id: root } = await createSession({ model: MODEL });
    const child = await api("POST", `/v1/sessions/${root}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "middle", prompt: "one two", model: MODEL },
    });
    expect(child.status).toBe(202);
    const childId = (child.body as { childId: string }).childId;
    await waitForEvents(childId, (es) => es.some((e) => e.type === "turn/end"));
    const grandchild = await oneShot(childId, "three four five");
    const childOwn = (await api("GET", `/v1/sessions/${childId}`)).body as {
      usage: { inputTokens: number; outputTokens: number };
    };
    const listing = await api("GET", `/v1/sessions/${root}/descendants`);
    const entries = (listing.body as { entries: any[] }).entries;
    const middle = entries.find((e) => e.id === childId);
    const bottom = entries.find((e) => e.id === grandchild.id);
    expect(middle.usage).toEqual(childOwn.usage);
    expect(bottom.usage).toEqual(grandchild.result.usage);
    expect(bottom.subtreeUsage).toEqual(bottom.usage);
    expect(middle.subtreeUsage).toEqual({
      inputTokens: childOwn.usage.inputTokens + grandchild.result.usage.inputTokens,
      outputTokens: childOwn.usage.outputTokens + grandchild.result.usage.outputTokens,
    });
  });
});

describe("token budgets (semantics.md §8)", () => {
  it("end a turn with BUDGET_EXCEEDED, without calling the model, when its step's reservation does not fit", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 5 } });
    const marker = `over budget ${crypto.randomUUID()}`;
    const first = await turn(id, marker);
    expect(ofTurn(first, "turn/end", 1)[0]!.data).toMatchObject({ reason: "error", code: "BUDGET_EXCEEDED" });
    expect(ofTurn(first, "turn/end", 1)[0]!.data.error).toMatch(
      /^BUDGET_EXCEEDED: the session's token budget of 5 cannot cover this model call: it reserves \d+ tokens/,
    );
    expect(ofTurn(first, "assistant/message", 1)).toEqual([]);
    expect(await fakeRequestsMentioning(marker)).toEqual([]);
    expect(((await api("GET", `/v1/sessions/${id}`)).body as { budget: unknown }).budget).toEqual({
      tokens: 5,
      used: 0,
    });
    // and no child can start on it
    const refused = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "more" },
    });
    expect(refused.status).toBe(422);
    expect((refused.body as { error: { code: string } }).error.code).toBe("BUDGET_EXCEEDED");
  });

  it("are shared with a child, not copied: the child spends from the tree's remainder and its spending counts once", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 5000 } });
    await turn(id, "a b c"); // 1 + 6 tokens ("hello from fake: a b c")
    const { id: childId, result } = await oneShot(id, "d e");
    const spent = 7 + result.usage.inputTokens + result.usage.outputTokens;
    const child = (await api("GET", `/v1/sessions/${childId}`)).body as { budget: unknown };
    expect(child.budget).toEqual({ tokens: 5000, used: spent, shared: true });
    const parent = (await api("GET", `/v1/sessions/${id}`)).body as { budget: unknown };
    expect(parent.budget).toEqual({ tokens: 5000, used: spent });
  });

  it("hold for parallel children: four children that never stop on their own draw from one remainder, end BUDGET_EXCEEDED and stay within it", async () => {
    // a model whose usage is its request's real size (about 1,000 tokens a step)
    const model = "openai:ctx-1000000";
    const { id } = await createSession({ model, budget: { tokens: 8000 } });
    // four children at once, each a model that calls a tool at every step (its turn would run to
    // the step budget: 64 steps, far more than 8,000 tokens each, were the budget copied to each)
    const started = await Promise.all(
      [1, 2, 3, 4].map(() =>
        api("POST", `/v1/sessions/${id}/subagents`, {
          body: {
            provider: "spawn",
            mode: "one-shot",
            prompt: "keep using the tool",
            model,
            maxOutputTokens: 50,
          },
        }),
      ),
    );
    for (const s of started) expect(s.status, JSON.stringify(s.body)).toBe(201);
    const runs = await Promise.all(
      started.map(async (s) => {
        const { runId } = s.body as { runId: string };
        for (let waits = 0; ; waits++) {
          const run = await api("GET", `/v1/sessions/${id}/runs/${runId}?wait=10000`);
          const body = run.body as { state: string; result: any };
          if (body.state === "settled" || waits >= 5) {
            expect(body.state, JSON.stringify(body)).toBe("settled");
            return body.result;
          }
        }
      }),
    );
    let total = 0;
    for (const [i, s] of started.entries()) {
      expect(runs[i].stopReason, JSON.stringify(runs[i])).toBe("error");
      expect(runs[i].output?.[0]?.text ?? runs[i].diagnostic ?? "").toContain("BUDGET_EXCEEDED");
      total += (await allEvents((s.body as { id: string }).id))
        .filter((e) => e.type === "assistant/message")
        .reduce((n, e) => n + e.data.usage.inputTokens + e.data.usage.outputTokens, 0);
    }
    // each step reserved its worst case (its request plus 50) before it was made: the tree stays
    // within its budget, and used most of it
    expect(total).toBeLessThanOrEqual(8000);
    expect(total).toBeGreaterThan(4000);
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { budget: { used: number } };
    expect(view.budget.used).toBe(total);
    // and the tree starts no child whose first step the remainder cannot cover
    const refused = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "one more", maxOutputTokens: 8000 },
    });
    expect((refused.body as { error: { code: string } }).error.code).toBe("BUDGET_EXCEEDED");
  });

  it("refuses a budget that is not positive tokens or dollars", async () => {
    for (const budget of [
      { tokens: 0 },
      { tokens: 1.5 },
      { tokens: "10" },
      {},
      { tokens: 10, extra: 1 },
      { usd: 0 },
      { usd: -1 },
      { usd: "1" },
    ]) {
      const res = await api("POST", "/v1/sessions", { body: { budget } });
      expect(res.status, JSON.stringify(budget)).toBe(400);
    }
  });
});
