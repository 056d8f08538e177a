import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession } from "../support/api";
import { textOf, type WireEvent } from "../support/logs";
import { script, toolCall } from "../support/scripts";
import { type WalkReport, walkReport } from "./fold";
import { isTheRecorder, quiet, Subscriber, start, stop, type Walked } from "./recorder";

/**
 * The walks (README "How it works"), measured: which product files run code between two
 * observable points, each walk taken after a warm-up of the same path (so loading a module or a
 * session's first use is not counted). The reporter (reporter.ts) prints them and writes
 * test-results/walks.json; fold.ts says how they are counted. Each walk's end is the moment a
 * subscriber of the session's event stream receives the event that ends it.
 */

const isAnswer = (text: string) => (e: WireEvent) =>
  e.type === "assistant/message" && textOf(e.data.content) === text;
const isTurnEnd = (e: WireEvent) => e.type === "turn/end";

async function post(sessionId: string, content: string): Promise<void> {
  const res = await api("POST", `/v1/sessions/${sessionId}/messages`, { body: { content } });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
}

/** Sends `content` and waits until its turn ended and the isolate is quiet again. */
async function warmUp(stream: Subscriber, sessionId: string, content: string): Promise<void> {
  const from = stream.mark();
  await post(sessionId, content);
  await stream.until(from, isTurnEnd, () => undefined);
  await quiet();
}

/** A foreground `subagent` call of the spawn provider: a one-shot child on the scripted model that answers 42. */
const SUBAGENT_CALL = {
  call: [toolCall("subagent", { description: "count", prompt: script({ say: "42" }) })],
};

describe("the walks", () => {
  it("a message to its answer: from the Worker's fetch of POST …/messages to the answer reaching a subscriber", async ({
    task,
  }) => {
    const { id } = await createSession();
    const stream = await Subscriber.open(id);
    // warm-up: the session's first message, whole
    await warmUp(stream, id, "warm up");

    const from = stream.mark();
    start();
    const answered = stream.until(from, isAnswer("echo: a walk"), stop);
    await post(id, "a walk");
    const walked = await answered;
    task.meta.walk = report("a message to its answer", walked);
    await stream.until(from, isTurnEnd, () => undefined);
  });

  it("a subagent call to the parent's result: from the model's `subagent` call (spawn, one-shot, scripted) to the parent's turn ending with the child's result", async ({
    task,
  }) => {
    const { id } = await createSession({ providers: ["spawn"] });
    const stream = await Subscriber.open(id);
    // warm-up: the same delegation, whole
    await warmUp(stream, id, script(SUBAGENT_CALL, { say: "warm" }));

    // the parent's model thinks before it answers with the call: the walk starts while it waits
    const from = stream.mark();
    await post(id, script({ think: 1_500 }, SUBAGENT_CALL, { say: "the child said 42" }));
    await stream.until(
      from,
      (e) => e.type === "turn/start",
      () => undefined,
    );
    await quiet();
    const startedAt = stream.mark();
    start();
    const walked = await stream.until(startedAt, isTurnEnd, stop);

    // the walk held the call, the child's result and the end, and nothing of the turn before the call
    const during = stream.events.slice(startedAt);
    const call = during.find((e) => e.type === "assistant/message");
    expect(call?.data.toolCalls.map((c: { name: string }) => c.name)).toEqual(["subagent"]);
    expect(during.find((e) => e.type === "tool/result")?.data).toMatchObject({
      name: "subagent",
      isError: false,
      content: [{ type: "text", text: "42" }],
    });
    expect(during.at(-1)?.data.reason).toBe("completed");
    expect(textOf(during.filter((e) => e.type === "assistant/message").at(-1)?.data.content)).toBe(
      "the child said 42",
    );
    const turnStart = stream.events.findLastIndex((e) => e.type === "turn/start");
    const before = stream.events.slice(turnStart, startedAt).map((e) => e.type);
    expect(before).not.toContain("assistant/message");
    expect(before).not.toContain("subagent/start");
    task.meta.walk = report("a subagent call to the parent's result", walked);
  });

  it("a quiet drive pass: the session's alarm when nothing is owed", async ({ task }) => {
    const { id } = await createSession();
    await warmUp(await Subscriber.open(id), id, "warm up");

    const object = env.SESSIONS.get(env.SESSIONS.idFromName(id));
    const walked = await runInDurableObject(object, async (instance: { alarm(): Promise<void> }) => {
      // the object's code writes where this test reads (one isolate)
      expect(isTheRecorder((globalThis as { __walks?: unknown }).__walks)).toBe(true);
      // a first pass settles what the warm-up left (an armed alarm); the second is measured
      await instance.alarm();
      start();
      await instance.alarm();
      return stop();
    });
    task.meta.walk = report("a quiet drive pass", walked);
  });
});

function report(name: string, walked: Walked): WalkReport {
  const walk = walkReport(name, walked);
  // the object's code was seen (it runs in the test's isolate and writes to the same recorder)
  expect(walk.files.some((file) => file.startsWith("durable-objects/"))).toBe(true);
  return walk;
}

declare module "vitest" {
  interface TaskMeta {
    walk?: WalkReport;
  }
}
