import { describe, expect, it } from "vitest";
import { agents, createSession, turn, waitFor } from "./support";

/** The embedding Worker's model routes (`models`), its own clients and an AI SDK model. */

function assistantTexts(log: { type: string; data: { content?: { text: string }[] } }[]): string[] {
  return log
    .filter((e) => e.type === "assistant/message")
    .map((e) => e.data.content!.map((b) => b.text).join(""));
}

describe("a Worker's model routes", () => {
  it("serve `prefix` and `prefix:<rest>` with the Worker's client, which sees the whole route", async () => {
    const bare = await createSession({ model: "custom" });
    expect(assistantTexts(await turn(bare.id, "hi"))).toEqual(["custom says: hi"]);
    const named = await createSession({ model: "custom:fast" });
    expect(assistantTexts(await turn(named.id, "hi"))).toEqual(["custom:fast says: hi"]);
  });

  it("are inherited by children like any model", async () => {
    const { id } = await createSession({ model: "custom" });
    const log = await turn(id, "start");
    expect(assistantTexts(log)).toEqual(["custom says: start"]);
    const started = await agents("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "from the parent" },
    });
    expect(started.status).toBe(201);
    const run = await agents("GET", `/v1/sessions/${id}/runs/${started.body.runId}?wait=10000`);
    expect(run.body.result.output).toEqual([{ type: "text", text: "custom says: from the parent" }]);
  });

  it("refuse a session on a route whose factory throws, or on a route nobody serves, saying why", async () => {
    const broken = await agents("POST", "/v1/sessions", { body: { model: "broken:x" } });
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatchObject({
      code: "INVALID_REQUEST",
      message: 'model: the model factory of "broken" failed: no API key for broken',
    });
    const unknown = await agents("POST", "/v1/sessions", { body: { model: "gemini:pro" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toBe(
      'model: unknown model route "gemini:pro" (use scripted, external, openai:<model>, workers-ai:<model>, custom[:<model>], broken[:<model>], liar[:<model>] or fake[:<model>])',
    );
    const noBinding = await agents("POST", "/v1/sessions", { body: { model: "workers-ai:@cf/x" } });
    expect(noBinding.status).toBe(400);
    expect(noBinding.body.error.message).toMatch(/the AI binding is not configured/);
  });

  it("end the turn with a clear error when a client answers something that is not a reply; the session goes on", async () => {
    const { id } = await createSession({ model: "liar" });
    const log = await turn(id, "hi");
    expect(log.filter((e) => e.type === "assistant/message")).toEqual([]);
    expect(log.find((e) => e.type === "turn/end")!.data).toEqual({
      turn: 1,
      reason: "error",
      error: "the model returned an invalid reply (content: Invalid input: expected array, received string)",
    });
    // the log stays readable and the next message is taken
    const next = await turn(id, "again", 2);
    expect(next.filter((e) => e.type === "turn/end")).toHaveLength(2);
  });

  it("serve an AI SDK model through aiSdkModel, streaming, with the Worker's tools offered", async () => {
    const { id } = await createSession({ model: "fake" });
    const log = await turn(id, "hello sdk");
    expect(assistantTexts(log)).toEqual(["hello from fake: hello sdk"]);
    const message = log.find((e) => e.type === "assistant/message")!;
    expect(message.data).toMatchObject({
      model: "fake",
      stopReason: "end",
      usage: { inputTokens: 1, outputTokens: 5 },
    });
    // the request the server got: streaming, with the user's tools next to the built-in ones
    const recorded = await fetch(
      `${new URL("/__requests", (await import("./support")).testEnv.OPENAI_BASE_URL)}`,
    );
    const { requests } = (await recorded.json()) as {
      requests: {
        body: { stream?: boolean; messages: unknown[]; tools?: { function: { name: string } }[] };
      }[];
    };
    const mine = requests.filter((r) => JSON.stringify(r.body.messages).includes("hello sdk"));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body.stream).toBe(true);
    const tools = mine[0]!.body.tools!.map((t) => t.function.name);
    expect(tools).toEqual(expect.arrayContaining(["echo", "probe", "explode", "subagent", "send_message"]));
  });

  it("a tool-calling AI SDK model step runs the Worker's tool and goes on", async () => {
    const { id } = await createSession({ model: "fake" });
    const log = await waitForTurn(id, "use the tool");
    expect(log.filter((e) => e.type === "tool/result").map((e) => e.data.name)).toEqual(["echo"]);
    expect(assistantTexts(log).at(-1)).toBe("tool said: ping");
  });
});

async function waitForTurn(id: string, content: string) {
  const sent = await agents("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
  return waitFor(id, (log) => log.some((e) => e.type === "turn/end"));
}
