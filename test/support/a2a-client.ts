import { type Message, type Part, Role, type Task } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { ADMIN, workerFetch } from "./api";

/**
 * The official A2A SDK's client (`@a2a-js/sdk/client`) against the Worker under test, and the
 * request shapes the tests send with it.
 */

/** A fetch into the Worker with a bearer token (none when `null`). */
export function fetchAs(token: string | null): typeof fetch {
  return (input, init) => {
    const request = new Request(input, init);
    if (token !== null) request.headers.set("authorization", `Bearer ${token}`);
    return workerFetch(request);
  };
}

/** The SDK's client, resolved from the agent card, over JSON-RPC. */
export async function connect(token: string = ADMIN): Promise<Client> {
  const fetchImpl = fetchAs(token);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl("http://example.com");
}

let counter = 0;

/** A user's text message with a fresh id; `taskId` continues that task. */
export function userMessage(text: string, taskId = ""): Message {
  counter += 1;
  return {
    messageId: `m-${Date.now()}-${counter}-${Math.random().toString(36).slice(2)}`,
    contextId: "",
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The send request for a message; `returnImmediately` answers without waiting for the turn. */
export function send(message: Message, returnImmediately = false) {
  return {
    tenant: "",
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

/** The text of a message's or an artifact's parts. */
export function texts(parts: readonly Part[] | undefined): string {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
}

/** The answer as a task (a message instead fails the test). */
export function asTask(result: Message | Task): Task {
  if (!("status" in result)) throw new Error(`expected a task, got a message: ${JSON.stringify(result)}`);
  return result;
}
