import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { allEvents } from "../../support/logs";

/**
 * A budget is a cap (README "Prices and budgets"): children started side by side cannot overshoot
 * their tree's budget together, since each model call reserves its worst case before it is made.
 * The attacks: twenty one-shot starts fired at once on `{"tokens": 3000}`, each child's one step
 * a request of about 1,000 tokens (its tools and prompt) as the tests' OpenAI-compatible server
 * counts them and reports them in `usage` like the real API (`ctx-<N>` models); and ten on
 * `{"usd": 3}`, each child's answer about $1 of output (`priced-` routes cost $1,000 per million
 * input tokens and $2,000 per million output tokens in the workers suite).
 */

const PROMPT = "tell me about the weather in a few words";

/** Starts `n` one-shot children of `parent` at once; every start is accepted or refused BUDGET_EXCEEDED. */
async function startAtOnce(
  parent: string,
  n: number,
  model: string,
  extra: Record<string, unknown> = {},
  prompt = PROMPT,
) {
  const started = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      api("POST", `/v1/sessions/${parent}/subagents`, {
        body: { provider: "spawn", mode: "one-shot", prompt: `${prompt} (${i})`, model, ...extra },
      }),
    ),
  );
  for (const s of started) {
    if (s.status !== 201) expect(s.body?.error?.code, JSON.stringify(s.body)).toBe("BUDGET_EXCEEDED");
  }
  return started.filter((s) => s.status === 201).map((s) => s.body as { id: string; runId: string });
}

/** Waits for each run to settle and sums what its child's model steps really used. */
async function spentBy(parent: string, runs: { id: string; runId: string }[]) {
  let tokens = 0;
  let usd = 0;
  let ran = 0;
  for (const { id, runId } of runs) {
    for (let waits = 0; ; waits++) {
      const run = await api("GET", `/v1/sessions/${parent}/runs/${runId}?wait=10000`);
      if (run.body?.state === "settled") break;
      expect(waits, `run ${runId} did not settle: ${JSON.stringify(run.body)}`).toBeLessThan(6);
    }
    const steps = (await allEvents(id)).filter((e) => e.type === "assistant/message");
    if (steps.length > 0) ran++;
    for (const step of steps) {
      tokens += step.data.usage.inputTokens + step.data.usage.outputTokens;
      usd += step.data.usage.costUsd ?? 0;
    }
  }
  return { tokens, usd, ran };
}

describe("parallel children stay within their tree's budget", () => {
  it("twenty one-shot children started at once on 3,000 tokens spend at most 25 % over it", async () => {
    const model = "openai:ctx-1000000";
    const { id } = await createSession({ model, budget: { tokens: 3000 } });
    const runs = await startAtOnce(id, 20, model, { maxOutputTokens: 200 });
    const spent = await spentBy(id, runs);
    expect(spent.tokens).toBeLessThanOrEqual(3000 * 1.25);
    // the budget was used, not merely refused: a child ran, and the tree's figure is the truth
    expect(spent.ran).toBeGreaterThan(0);
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { budget: { used: number } };
    expect(view.budget.used).toBe(spent.tokens);
  });

  it("ten children started at once on $3 spend at most 25 % over it", async () => {
    // each child's answer repeats its 500-word prompt: about 500 output tokens, $1 at the suite's
    // prices; the output limit covers it, so each step's reservation is a true worst case
    const model = "openai:priced-model";
    const { id } = await createSession({ model, budget: { usd: 3 } });
    const words = Array.from({ length: 500 }, (_, i) => `w${i % 10}`).join(" ");
    const runs = await startAtOnce(id, 10, model, { maxOutputTokens: 600 }, words);
    const spent = await spentBy(id, runs);
    expect(spent.usd).toBeLessThanOrEqual(3 * 1.25);
    expect(spent.ran).toBeGreaterThan(0);
    const view = (await api("GET", `/v1/sessions/${id}`)).body as { budget: { usedUsd: number } };
    expect(view.budget.usedUsd).toBeCloseTo(spent.usd, 8);
  });

  it("a child whose first step cannot fit is refused at its start, naming its reservation and the remainder", async () => {
    const model = "openai:ctx-1000000";
    const { id } = await createSession({ model, budget: { tokens: 3000 } });
    // no maxOutputTokens: the step reserves its input estimate plus the default output limit (1,024)
    const refused = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "x".repeat(8000), model },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe("BUDGET_EXCEEDED");
    expect(refused.body.error.message).toMatch(
      /token budget of 3000 cannot cover a child's first step: it reserves 3025 tokens .* and 3000 are left/,
    );
  });
});
