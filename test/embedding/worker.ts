/**
 * The embedding suite's Worker: the runtime mounted under /agents through the public entry that
 * takes only the protocols it is given (`subagents-edge/core`, here A2A and Workers AI), with tools
 * and models that exercise every path of the library surface (docs/embedding.md).
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import { a2a } from "../../src/protocols/a2a";
import { workersAi } from "../../src/protocols/workers-ai";
import { aiSdkModel, createSubagents, defineTool, type ModelClient } from "../../src/worker/core";

export interface EmbeddingEnv {
  AGENT_SESSIONS: DurableObjectNamespace;
  AGENT_REGISTRY: DurableObjectNamespace;
  STORE: KVNamespace;
  ADMIN_TOKEN: string;
  OPENAI_BASE_URL: string;
  OPENAI_API_KEY: string;
  MODEL_TIMEOUT_SECONDS?: string;
}

/** What a tool saw of its call: recorded in KV under `seen:<callKey>:<n>` and returned. */
const probe = defineTool<z.ZodObject<{ note: z.ZodString }>, EmbeddingEnv>({
  name: "probe",
  description: "Reports what the tool saw of its call.",
  input: z.object({ note: z.string() }),
  async run({ note }, { env, sessionId, callKey, toolCallId, signal }) {
    const seen = { note, sessionId, callKey, toolCallId, aborted: signal.aborted, kv: typeof env.STORE.put };
    await env.STORE.put(`seen:${callKey}`, JSON.stringify(seen));
    return JSON.stringify(seen);
  },
});

/** Runs twice for one call when the object crashes during the first run: counts its runs per callKey. */
const onceThenPark = defineTool<z.ZodObject<Record<string, never>>, EmbeddingEnv>({
  name: "park_first_run",
  description: "Parks its first run of a call forever; answers on the next run.",
  input: z.object({}),
  async run(_input, { env, callKey }) {
    const runs = Number((await env.STORE.get(`runs:${callKey}`)) ?? "0") + 1;
    await env.STORE.put(`runs:${callKey}`, String(runs));
    if (runs === 1) await new Promise(() => {});
    return `run ${runs} of ${callKey}`;
  },
});

/** Parks every run of a call forever (the object crashes during each): counts its runs per callKey. */
const alwaysPark = defineTool<z.ZodObject<Record<string, never>>, EmbeddingEnv>({
  name: "park_every_run",
  description: "Parks every run forever.",
  input: z.object({}),
  async run(_input, { env, callKey }) {
    const runs = Number((await env.STORE.get(`runs:${callKey}`)) ?? "0") + 1;
    await env.STORE.put(`runs:${callKey}`, String(runs));
    return new Promise<string>(() => {});
  },
});

const explode = defineTool({
  name: "explode",
  description: "Throws.",
  input: z.object({}),
  run() {
    throw new Error("boom in the tool");
  },
});

const wrongResult = defineTool({
  name: "wrong_result",
  description: "Returns something that is not a result.",
  input: z.object({}),
  run: () => 42 as unknown as string,
});

const rich = defineTool({
  name: "rich",
  description: "Answers with content blocks, flagged as an error when asked.",
  input: z.object({ fail: z.boolean().optional() }),
  run: ({ fail }) => ({
    content: [
      { type: "text", text: "part one, " },
      { type: "text", text: "part two" },
    ],
    isError: fail === true,
  }),
});

const slow = defineTool({
  name: "slow",
  description: "Takes longer than its timeout and ignores its signal.",
  input: z.object({}),
  timeoutMs: 200,
  run: () => new Promise<string>((resolve) => setTimeout(() => resolve("too late"), 5_000)),
});

const waitForAbort = defineTool<z.ZodObject<Record<string, never>>, EmbeddingEnv>({
  name: "wait_for_abort",
  description: "Waits until its signal aborts and records why.",
  input: z.object({}),
  run: (_input, { env, callKey, signal }) =>
    new Promise<string>((resolve) => {
      signal.addEventListener("abort", () => {
        void env.STORE.put(`aborted:${callKey}`, String(signal.reason)).then(() => resolve("aborted"));
      });
    }),
});

/** `custom` and `custom:<rest>`: the route and the newest user text, without any network. */
const custom = (): ModelClient => ({
  async generate(request) {
    const last = request.turn.findLast((m) => m.role === "user");
    const text = last?.role === "user" ? last.content.map((b) => b.text).join("") : "";
    return {
      content: [{ type: "text", text: `${request.model} says: ${text}` }],
      toolCalls: [],
      stopReason: "end",
    };
  },
});

export const subagents = createSubagents<EmbeddingEnv>({
  basePath: "/agents/",
  bindings: { sessions: "AGENT_SESSIONS", registry: "AGENT_REGISTRY" },
  protocols: [a2a, workersAi],
  tools: [probe, onceThenPark, alwaysPark, explode, wrongResult, rich, slow, waitForAbort],
  models: {
    custom,
    broken: () => {
      throw new Error("no API key for broken");
    },
    // a client that answers something that is not a reply
    liar: () => ({ generate: async () => ({ content: "not blocks", toolCalls: [] }) as never }),
    // a user's AI SDK model, against the tests' OpenAI-compatible server
    fake: (env) =>
      aiSdkModel(
        createOpenAICompatible({
          name: "fake",
          baseURL: env.OPENAI_BASE_URL,
          apiKey: env.OPENAI_API_KEY,
          includeUsage: true,
        }).chatModel("fake-model"),
      ),
  },
});

export const { SessionObject, RegistryObject, SubagentsEntrypoint } = subagents;

export default {
  async fetch(request: Request, env: EmbeddingEnv, ctx: ExecutionContext): Promise<Response> {
    if (new URL(request.url).pathname === "/mine") return new Response("the Worker's own route");
    return subagents.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<EmbeddingEnv>;
