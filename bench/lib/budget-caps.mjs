// How far past its budget a tree of children started at once can spend (README "Prices and
// budgets", the block between `budget-caps` markers): `npm run bench -- --only=budgets`. The
// Worker's `openai:` routes call an OpenAI-compatible server in this process that answers with
// usage as the real API reports it: `prompt_tokens` the request's size (four characters a token,
// four tokens a message, its tools counted), `completion_tokens` the words of its answer. Each
// case starts its children at once with one-shot starts, waits for every run, then reads what the
// tree really spent from the descendants listing (the sum of every step's reported usage).
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

/** The bench's prices (USD per million tokens) for the dollar case: about $1 a child's answer. */
export const BUDGET_PRICES = { "openai:bench-priced": { input: 1000, output: 2000 } };

/** The cases: children started at once on one budget (README's figures). */
export const BUDGET_CASES = [
  {
    name: '20 one-shot children on {"tokens": 3000}',
    children: 20,
    budget: { tokens: 3000 },
    model: "openai:bench-tokens",
    maxOutputTokens: 200,
    prompt: (i) => `tell me about the weather in a few words (${i})`,
  },
  {
    name: '10 one-shot children on {"usd": 3}',
    children: 10,
    budget: { usd: 3 },
    model: "openai:bench-priced",
    maxOutputTokens: 600,
    // the answer repeats the prompt: about 500 output tokens, $1 at the bench's prices
    prompt: (i) => `${Array.from({ length: 500 }, (_, w) => `w${w % 10}`).join(" ")} (${i})`,
  },
];

const text = (content) =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("")
      : "";

/** Starts the model server: it answers every request with its last user text, and real usage. */
export async function startUsageModel() {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      let chars = body.tools === undefined ? 0 : JSON.stringify(body.tools).length;
      for (const m of body.messages) chars += 16 + text(m.content).length;
      const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
      const answer = `answer: ${text(lastUser?.content)}`;
      const usage = {
        prompt_tokens: Math.ceil(chars / 4),
        completion_tokens: answer.split(/\s+/).filter(Boolean).length,
      };
      usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
      const message = { role: "assistant", content: answer };
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: "c",
            object: "chat.completion",
            created: 0,
            model: body.model,
            choices: [{ index: 0, message, finish_reason: "stop", logprobs: null }],
            usage,
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (choices, extra = {}) =>
        res.write(
          `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: body.model, choices, ...extra })}\n\n`,
        );
      send([{ index: 0, delta: { role: "assistant", content: answer }, finish_reason: null }]);
      send([{ index: 0, delta: {}, finish_reason: "stop" }]);
      send([], { usage });
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Runs one case: what the tree spent against its budget, and how many children ran a step. */
export async function measureCase(admin, spec) {
  const { id } = await admin.createSession({ model: spec.model, budget: spec.budget });
  const starts = await Promise.all(
    Array.from({ length: spec.children }, (_, i) =>
      admin.call("POST", `/v1/sessions/${id}/subagents`, {
        provider: "spawn",
        mode: "one-shot",
        prompt: spec.prompt(i),
        model: spec.model,
        maxOutputTokens: spec.maxOutputTokens,
      }),
    ),
  );
  const runs = [];
  for (const s of starts) {
    if (s.status === 201) runs.push(s.body.runId);
    else if (s.body?.error?.code !== "BUDGET_EXCEEDED")
      throw new Error(`a start answered ${s.status} ${JSON.stringify(s.body)}`);
  }
  for (const runId of runs) {
    for (let waits = 0; ; waits++) {
      const run = await admin.call(
        "GET",
        `/v1/sessions/${id}/runs/${runId}?wait=10000`,
        undefined,
        200,
        20_000,
      );
      if (run.body.state === "settled") break;
      if (waits >= 6) throw new Error(`run ${runId} did not settle`);
    }
  }
  const listing = (await admin.call("GET", `/v1/sessions/${id}/descendants`, undefined, 200)).body;
  const usage = listing.subtreeUsage ?? { inputTokens: 0, outputTokens: 0 };
  const ran = (listing.entries ?? []).filter((e) => e.id !== id && e.usage !== undefined).length;
  const spent =
    spec.budget.tokens !== undefined ? usage.inputTokens + usage.outputTokens : (usage.costUsd ?? 0);
  const limit = spec.budget.tokens ?? spec.budget.usd;
  return { name: spec.name, started: runs.length, ran, spent, limit, over: spent / limit - 1 };
}

/** The README block: each case's spend against its budget. */
export function budgetBlock(results, { revision, date, command }) {
  const money = (v, dollars) => (dollars ? `$${v.toFixed(2)}` : `${Math.round(v)} tokens`);
  const rows = results.map((r) => {
    const dollars = r.name.includes("usd");
    const over = r.over > 0 ? `+${(r.over * 100).toFixed(1)} %` : "within";
    return `| ${r.name} | ${r.started} of ${BUDGET_CASES.find((c) => c.name === r.name).children} | ${r.ran} | ${money(r.spent, dollars)} of ${money(r.limit, dollars)} | ${over} |`;
  });
  return [
    "| children started at once | accepted | ran a step | spent of the budget | past it |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    `Written by \`${command}\` (${revision}) on ${date}.`,
  ].join("\n");
}

/** Writes `block` between README.md's `budget-caps` markers. */
export function writeBudgetBlock(root, block) {
  const file = join(root, "README.md");
  const readme = readFileSync(file, "utf8");
  const start = "<!-- budget-caps:start -->";
  const end = "<!-- budget-caps:end -->";
  const a = readme.indexOf(start);
  const b = readme.indexOf(end);
  if (a < 0 || b < a) throw new Error("README.md has no budget-caps markers");
  writeFileSync(file, `${readme.slice(0, a + start.length)}\n${block}\n${readme.slice(b)}`);
}
