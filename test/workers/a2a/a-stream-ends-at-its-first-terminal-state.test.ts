import { type Message, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { expect, it } from "vitest";
import { connect, send, texts, userMessage } from "../../support/a2a-client";
import { script } from "../../support/scripts";

/**
 * An A2A stream (`SendStreamingMessage`, read with the official SDK's client) ends at its first
 * terminal state: a task that is over when its stream starts (a message answered before the
 * stream's first read) is the stream's one event, its answer in it; a live stream sends exactly one
 * terminal status, last.
 */

const TERMINAL = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED];

interface Seen {
  kind: string;
  state?: TaskState;
  /** The task's artifacts' text, or the artifact update's. */
  text?: string;
}

async function streamOf(client: Client, message: Message): Promise<Seen[]> {
  const seen: Seen[] = [];
  for await (const event of client.sendMessageStream(send(message))) {
    const payload = (event as unknown as { payload?: { $case: string; value: any } }).payload;
    if (payload?.$case === "artifactUpdate")
      seen.push({ kind: "artifact", text: texts(payload.value.artifact?.parts) });
    else if (payload?.$case === "task")
      seen.push({
        kind: "task",
        state: payload.value.status?.state,
        text: (payload.value.artifacts ?? []).map((a: any) => texts(a.parts)).join("|"),
      });
    else if (payload) seen.push({ kind: payload.$case, state: payload.value.status?.state });
  }
  return seen;
}

function terminalStates(seen: readonly Seen[]): number {
  return seen.filter((s) => s.state !== undefined && TERMINAL.includes(s.state)).length;
}

it("a message answered before its stream's first read streams its ended task alone, answer included", async () => {
  const client = await connect();
  const message = userMessage("answered already");
  await client.sendMessage(send(message));
  const seen = await streamOf(client, message);
  expect(terminalStates(seen)).toBe(1);
  expect(seen).toEqual([
    { kind: "task", state: TaskState.TASK_STATE_COMPLETED, text: "echo: answered already" },
  ]);
});

it("a live stream sends one terminal status, as its last event", async () => {
  const client = await connect();
  const seen = await streamOf(client, userMessage(script({ think: 200 }, { say: "live" })));
  expect(terminalStates(seen)).toBe(1);
  expect(seen.at(-1)).toEqual({ kind: "statusUpdate", state: TaskState.TASK_STATE_COMPLETED });
  expect(seen.at(-2)).toEqual({ kind: "artifact", text: "live" });
});
