import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { allEvents, waitForEvents, type WireEvent } from "../../support/logs";

/**
 * MODEL_PRICES and costUsd (README "Prices and budgets"): the workers suite prices
 * `openai:priced-*` at $1,000 per million input tokens ($500 cached) and $2,000 per million output
 * tokens; every other route has no price. The tests' OpenAI-compatible server reports one prompt
 * token per message and one completion token per word of its answer.
 */

const PRICED = "openai:priced-model";
const UNPRICED = "openai:fake-model";

const cost = (input: number, output: number) => (input * 1000 + output * 2000) / 1_000_000;

async function turn(id: string, content: string, n = 1): Promise<WireEvent[]> {
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status, JSON.stringify(sent.body)).toBe(202);
  return waitForEvents(id, (es) => es.some((e) => e.type === "turn/end" && e.data.turn === n), {
    what: `turn ${n}`,
  });
}

describe("costUsd: every usage figure of a priced model carries what it cost", () => {
  it("on each step, the turn's end, the run's result, subagent/end, the views, the listing's tree total and the spans", async () => {
    const { id } = await createSession({ model: PRICED });
    const events = await turn(id, "use the tool");
    const steps = events.filter((e) => e.type === "assistant/message").map((e) => e.data.usage);
    expect(steps).toEqual([
      { inputTokens: 1, outputTokens: 0, costUsd: cost(1, 0) },
      { inputTokens: 3, outputTokens: 3, costUsd: cost(3, 3) },
    ]);
    const end = events.find((e) => e.type === "turn/end")!;
    expect(end.data.usage).toEqual({ inputTokens: 4, outputTokens: 3, costUsd: cost(4, 3) });

    // a one-shot child on the same price: its result, the parent's subagent/end
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "count my cost", model: PRICED },
    });
    expect(started.status).toBe(201);
    const { runId, id: childId } = started.body as { runId: string; id: string };
    const run = (await api("GET", `/v1/sessions/${id}/runs/${runId}?wait=15000`)).body as { result: any };
    // "hello from fake: count my cost": 1 prompt token, 6 words
    expect(run.result.usage).toEqual({ inputTokens: 1, outputTokens: 6, costUsd: cost(1, 6) });
    const subagentEnd = (await allEvents(id)).find(
      (e) => e.type === "subagent/end" && e.data.runId === runId,
    )!;
    expect(subagentEnd.data.usage).toEqual(run.result.usage);

    // the views: own usage, and the tree's total once the child reported it
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { usage: any; subtreeUsage: any };
    expect(view.usage).toEqual({ inputTokens: 4, outputTokens: 3, costUsd: cost(4, 3) });
    expect(view.subtreeUsage).toEqual({ inputTokens: 5, outputTokens: 9, costUsd: cost(5, 9) });
    const listing = (await api("GET", `/v1/sessions/${id}/descendants`)).body as {
      entries: any[];
      subtreeUsage: any;
    };
    expect(listing.subtreeUsage).toEqual(view.subtreeUsage);
    expect(listing.entries.find((e) => e.id === childId).usage).toEqual(run.result.usage);

    // the spans carry it too: each model call's, and each turn's sum
    const trace = (await api("GET", `/v1/sessions/${id}/trace`)).body as any;
    const spans = trace.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
    const costOf = (span: any) =>
      span.attributes.find((a: any) => a.key === "subagents.cost_usd")?.value.doubleValue;
    const chats = spans.filter((s: any) => s.name === `chat ${PRICED}`);
    expect(chats.map(costOf).sort()).toEqual([cost(1, 0), cost(1, 6), cost(3, 3)].sort());
    const turns = spans.filter((s: any) => s.name.startsWith("invoke_agent"));
    expect(turns.map(costOf).sort()).toEqual([cost(1, 6), cost(4, 3)].sort());
  });

  it("a model with no price has no costUsd anywhere, never a made-up zero", async () => {
    const { id } = await createSession({ model: UNPRICED });
    const events = await turn(id, "use the tool");
    for (const e of events.filter((e) => e.type === "assistant/message" || e.type === "turn/end"))
      expect(e.data.usage).not.toHaveProperty("costUsd");
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { usage: any };
    expect(view.usage).not.toHaveProperty("costUsd");
  });
});

describe("budget.usd: a budget in dollars", () => {
  it("ends a turn BUDGET_EXCEEDED when its call's priced worst case does not fit, and shows what was spent", async () => {
    const { id } = await createSession({ model: PRICED, budget: { usd: 0.005 } });
    // a step reserves its input estimate plus its output limit, priced: far more than $0.005
    const first = await turn(id, "use the tool");
    const end = first.find((e) => e.type === "turn/end")!;
    expect(end.data).toMatchObject({ reason: "error", code: "BUDGET_EXCEEDED" });
    expect(end.data.error).toMatch(
      /^BUDGET_EXCEEDED: the session's budget of \$0\.005 cannot cover this model call: it reserves \$[\d.]+ \(its input estimate plus its output limit\) and \$0\.005 is left/,
    );
    expect(first.filter((e) => e.type === "assistant/message")).toEqual([]);
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { budget: unknown };
    expect(view.budget).toEqual({ usd: 0.005, used: 0, usedUsd: 0 });
    // no child may start on it either
    const refused = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "x" },
    });
    expect((refused.body as { error: { code: string } }).error.code).toBe("BUDGET_EXCEEDED");
  });

  it("is refused for a model with no price (nothing would count against it), at creation and at a child's start", async () => {
    const created = await api("POST", "/v1/sessions", { body: { model: UNPRICED, budget: { usd: 1 } } });
    expect(created.status).toBe(400);
    expect((created.body as { error: { code: string; message: string } }).error).toMatchObject({
      code: "INVALID_REQUEST",
      message: expect.stringContaining("MODEL_PRICES"),
    });
    const { id } = await createSession({ model: PRICED, budget: { usd: 1 } });
    const child = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "x", model: UNPRICED },
    });
    expect((child.body as { error: { code: string } }).error.code).toBe("INVALID_REQUEST");
  });
});
