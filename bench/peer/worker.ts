/**
 * The benchmark's peer (bench/README.md, "Peer rows"): the delegations of the spawn and fan-out
 * rows written with Cloudflare's Agents SDK, the way its documentation starts and calls an agent
 * (`getAgentByName`, then a method over RPC). Each child is a brand-new agent (a random name)
 * that writes one row with the SDK's `this.sql` and answers; the parent records the answer.
 * Bundled and run by bench/run.mjs in workerd beside the runtime's benchmark Worker; its package
 * (`agents`) is installed into bench/peer by the bench, never by the product's `npm ci`.
 *
 * The `runAgentTool` row delegates to a chat agent (`@cloudflare/ai-chat`'s `AIChatAgent`, the
 * SDK's chat host) that the SDK runs as a sub-agent of the parent; its turn is the AI SDK's
 * `streamText` over a model that answers `echo: <prompt>` at once, the peer of the runtime's
 * scripted echo turn.
 */
import { AIChatAgent } from "@cloudflare/ai-chat";
import { Agent, getAgentByName } from "agents";
import { convertToModelMessages, streamText, type LanguageModel } from "ai";

interface PeerEnv {
  PEER_PARENT: DurableObjectNamespace<PeerParent>;
  PEER_CHILD: DurableObjectNamespace<PeerChild>;
}

/** A fan-out is bounded like the floor's. */
const MAX_FANOUT = 1_000;

export class PeerChild extends Agent<PeerEnv> {
  /** One durable write, then the answer. */
  async work(task: string): Promise<string> {
    this.sql`CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`;
    this.sql`INSERT INTO rows (value) VALUES (${task})`;
    return `done: ${task}`;
  }
}

/** The last user message's text. */
function lastUserText(prompt: readonly { role: string; content: unknown }[]): string {
  const user = [...prompt].reverse().find((m) => m.role === "user");
  const parts = Array.isArray(user?.content) ? (user.content as { type: string; text?: string }[]) : [];
  return parts.map((p) => (p.type === "text" ? (p.text ?? "") : "")).join("");
}

/** A model answering `echo: <the last user text>` in one streamed chunk (LanguageModelV4). */
const echoModel = {
  specificationVersion: "v4",
  provider: "bench",
  modelId: "echo",
  supportedUrls: {},
  async doGenerate() {
    throw new Error("the echo model only streams");
  },
  async doStream(options: { prompt: { role: string; content: unknown }[] }) {
    const text = `echo: ${lastUserText(options.prompt)}`;
    const parts = [
      { type: "stream-start", warnings: [] },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: text },
      { type: "text-end", id: "t" },
      {
        type: "finish",
        finishReason: { unified: "stop", raw: "stop" },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
      },
    ];
    return {
      stream: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  },
} as unknown as LanguageModel;

/** The chat agent behind `runAgentTool`: one streamed echo turn per message. */
export class PeerChat extends AIChatAgent<PeerEnv> {
  async onChatMessage(): Promise<Response> {
    const result = streamText({ model: echoModel, messages: await convertToModelMessages(this.messages) });
    return result.toUIMessageStreamResponse();
  }
}

export class PeerParent extends Agent<PeerEnv> {
  /** The SDK's agent tool: a brand-new chat sub-agent runs one turn; its output is recorded. */
  async tool(task: string): Promise<string> {
    const run = await this.runAgentTool(PeerChat, { input: task, eventDelivery: "terminal" });
    const answer = typeof run.output === "string" ? run.output : JSON.stringify(run);
    this.#record(answer);
    return answer;
  }

  /** A brand-new child agent does its work and answers; the parent records the answer. */
  async spawn(task: string): Promise<string> {
    const answer = await this.#child(task);
    this.#record(answer);
    return answer;
  }

  /** `n` brand-new children at once; each answer is recorded as it arrives. */
  async fanout(n: number, task: string): Promise<number> {
    const count = Math.max(1, Math.min(MAX_FANOUT, Math.floor(n)));
    const answers = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const answer = await this.#child(`${task} #${i}`);
        this.#record(answer);
        return answer;
      }),
    );
    return answers.length;
  }

  async #child(task: string): Promise<string> {
    const child = await getAgentByName(this.env.PEER_CHILD, `child-${crypto.randomUUID()}`);
    return child.work(task);
  }

  #record(answer: string): void {
    this.sql`CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`;
    this.sql`INSERT INTO rows (value) VALUES (${answer})`;
  }
}

/** `POST /peer/spawn?key=<parent>` and `POST /peer/fanout?key=<parent>&n=<1..1000>`. */
export default {
  async fetch(request: Request, env: PeerEnv): Promise<Response> {
    const url = new URL(request.url);
    const parent = await getAgentByName(env.PEER_PARENT, url.searchParams.get("key") ?? "parent");
    if (request.method === "POST" && url.pathname === "/peer/spawn")
      return Response.json({ answer: await parent.spawn("x") });
    if (request.method === "POST" && url.pathname === "/peer/tool")
      return Response.json({ answer: await parent.tool("hi") });
    if (request.method === "POST" && url.pathname === "/peer/fanout") {
      const n = Number(url.searchParams.get("n") ?? "100");
      return Response.json({ children: await parent.fanout(n, "x") });
    }
    return Response.json({ error: { code: "NOT_FOUND", message: "no such peer route" } }, { status: 404 });
  },
} satisfies ExportedHandler<PeerEnv>;
