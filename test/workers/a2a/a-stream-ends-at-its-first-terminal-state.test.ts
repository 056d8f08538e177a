import { type Message, type Part, Role, TaskState } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { expect, it } from "vitest";
import { ADMIN, workerFetch } from "../../support/api";
import { script } from "../../support/scripts";

/**
 * An A2A stream (`SendStreamingMessage`, read with the official SDK's client) ends at its first
 * terminal state: a task that is over when its stream starts (a message answered before the
 * stream's first read) is the stream's one event, its answer in it; a live stream sends exactly one
 * terminal status, last.
 */

async function connect(): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    request.headers.set("authorization", `Bearer ${ADMIN}`);
    return workerFetch(request);
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl("http://example.com");
}

function userMessage(text: string): Message {
  return {
    messageId: `m-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function send(message: Message, returnImmediately = false) {
  return {
    tenant: "",
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

function texts(parts: readonly Part[] | undefined): string {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
}

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
