import { type AgentCard, type Message, Role, type Task, TaskState } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { A2AError, JsonRpcTransportError } from "@a2a-js/sdk/errors";
import { resultTextOf, textPart } from "../a2a/wire";
import { type ContentBlock, textOf } from "../contract/content";
import type { SubagentResult } from "../contract/run";
import { checkOutboundUrl } from "../contract/outbound-url";
import { capDiagnostic } from "../core/run-result";
import { OutboundRefused, outboundFetch } from "../platform/outbound-fetch";
import { isPermanent, scrub } from "./remote-protocol";

/**
 * The `a2a` provider's side of the Agent2Agent protocol, on the official SDK's client
 * (`@a2a-js/sdk/client`: the agent card, then JSON-RPC, A2A 1.0 or 0.3 as the card offers). Each
 * call is bounded in time and never throws: a failure says whether a retry may help (`permanent`
 * when the agent refused the request itself) and why, in words that never contain the token.
 *
 * The card is the agent's word about itself, learned at run time: the endpoint it names must pass
 * the outbound rule and be on the origin the provider was registered with (README, Security and limits), or the
 * call fails for good before anything is sent there. Every request (card, endpoint) goes through
 * `outboundFetch` pinned to that origin, so no request of ours, nor a redirect, leaves it.
 */

/** A call that gets no answer within this long has failed (it is retried with backoff). */
export const A2A_CALL_TIMEOUT_MS = 10_000;

export interface A2aTarget {
  /** The agent card's URL, or the agent's base URL (its card at `.well-known/agent-card.json`). */
  url: string;
  token: string | null;
  /** The span that asked for the run (W3C `traceparent`): the agent's work may join its trace. */
  traceparent?: string | undefined;
}

export type A2aOutcome<T> = { ok: true; value: T } | { ok: false; permanent: boolean; error: string };

/** What a task's state means for a one-shot run: still going, or its one result. */
export type TaskProgress = { done: false } | { done: true; result: SubagentResult };

/** The message a run sends: its id is the run's, so an agent that de-duplicates sees one message. */
export function runMessage(runId: string, prompt: readonly ContentBlock[]): Message {
  return {
    messageId: `subagents-edge-run-${runId}`,
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [textPart(textOf([...prompt]))],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** Sends the run's message without waiting for the task to finish: the task (or a direct answer). */
export function sendRunMessage(target: A2aTarget, message: Message): Promise<A2aOutcome<Task | Message>> {
  return call(target, (client, signal) =>
    client.sendMessage(
      {
        tenant: "",
        message,
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          returnImmediately: true,
        },
        metadata: undefined,
      },
      { signal },
    ),
  );
}

export function readTask(target: A2aTarget, taskId: string): Promise<A2aOutcome<Task>> {
  return call(target, (client, signal) =>
    client.getTask({ tenant: "", id: taskId, historyLength: 0 }, { signal }),
  );
}

export function cancelTask(target: A2aTarget, taskId: string): Promise<A2aOutcome<Task>> {
  return call(target, (client, signal) =>
    client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, { signal }),
  );
}

/**
 * A task's state as a run's progress (docs/semantics.md §12): completed -> `completed` with the
 * final message's (or artifacts') text; failed and rejected -> `error`; canceled -> `aborted`;
 * input-required and auth-required -> `error` (a one-shot child cannot answer); anything else
 * unknown -> `error`. Submitted and working are not done.
 */
export function progressOf(answer: Task | Message, secrets: readonly string[] = []): TaskProgress {
  if (!("status" in answer)) return { done: true, result: completed(texts(answer)) };
  const task = answer;
  const said = scrub(resultTextOf(task), secrets);
  const because = said ? `: ${said}` : "";
  switch (task.status?.state) {
    case TaskState.TASK_STATE_SUBMITTED:
    case TaskState.TASK_STATE_WORKING:
      return { done: false };
    case TaskState.TASK_STATE_COMPLETED:
      return { done: true, result: completed(said) };
    case TaskState.TASK_STATE_CANCELED:
      return { done: true, result: ended("aborted", `the A2A agent canceled the task${because}`) };
    case TaskState.TASK_STATE_FAILED:
      return { done: true, result: ended("error", `the A2A agent's task failed${because}`) };
    case TaskState.TASK_STATE_REJECTED:
      return { done: true, result: ended("error", `the A2A agent rejected the task${because}`) };
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED: {
      const what = task.status.state === TaskState.TASK_STATE_AUTH_REQUIRED ? "authorization" : "more input";
      return {
        done: true,
        result: ended(
          "error",
          `the A2A agent asked for ${what}, which a one-shot child cannot give${because}`,
        ),
      };
    }
    default:
      return {
        done: true,
        result: ended("error", "the A2A agent answered a task state this runtime does not know"),
      };
  }
}

function texts(message: Message): string {
  return message.parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n");
}

function completed(text: string): SubagentResult {
  return { output: text ? [{ type: "text", text }] : [], stopReason: "completed" };
}

function ended(stopReason: "error" | "aborted", diagnostic: string): SubagentResult {
  return { output: [], stopReason, diagnostic: capDiagnostic(diagnostic) };
}

/** Agent cards per URL and token for a minute (per isolate): a poll does not fetch the card every time. */
const CARD_TTL_MS = 60_000;
const cards = new Map<string, { card: AgentCard; until: number }>();

async function call<T>(
  target: A2aTarget,
  op: (client: Client, signal: AbortSignal) => Promise<T>,
): Promise<A2aOutcome<T>> {
  const secrets = target.token === null ? [] : [target.token];
  // a timer of our own, cleared when the call is over (AbortSignal.timeout's would outlive it)
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timed out")), A2A_CALL_TIMEOUT_MS);
  const seen: Seen = {};
  try {
    const client = await clientFor(target, controller.signal, seen);
    return { ok: true, value: await op(client, controller.signal) };
  } catch (error) {
    // our own refusal (a card's endpoint elsewhere, a redirect away): final, whatever the SDK made of it
    const refused = seen.refused ?? (error instanceof OutboundRefused ? error.message : undefined);
    if (refused !== undefined) return { ok: false, permanent: true, error: short(scrub(refused, secrets)) };
    const status = seen.status;
    const reason = error instanceof Error ? error.message : String(error);
    if (status !== undefined && status >= 400)
      return { ok: false, permanent: isPermanent(status), error: `HTTP ${status}` };
    // the agent's own refusals (task not found, unsupported, ...) are final; an internal error or
    // a code the SDK does not know (a JsonRpcTransportError) may pass, like a 5xx
    if (error instanceof A2AError && !(error instanceof JsonRpcTransportError))
      return { ok: false, permanent: true, error: short(scrub(reason, secrets)) };
    const what = error instanceof A2AError ? reason : `no answer (${reason})`;
    return { ok: false, permanent: false, error: short(scrub(what, secrets)) };
  } finally {
    clearTimeout(timer);
  }
}

/** What a call's requests saw: the last HTTP status, and our own refusal to send one. */
interface Seen {
  status?: number;
  refused?: string;
}

/** The SDK's JSON-RPC transport, made only for an endpoint on the provider's origin that passes the rule. */
class PinnedJsonRpcTransportFactory extends JsonRpcTransportFactory {
  readonly #origin: string;
  readonly #seen: Seen;

  constructor(options: ConstructorParameters<typeof JsonRpcTransportFactory>[0], origin: string, seen: Seen) {
    super(options);
    this.#origin = origin;
    this.#seen = seen;
  }

  override async create(url: string, card: AgentCard) {
    const problem = checkOutboundUrl(url, { origin: this.#origin });
    if (problem !== undefined) {
      this.#seen.refused = `the agent card's endpoint ${problem}: not sent`;
      throw new OutboundRefused(this.#seen.refused);
    }
    return super.create(url, card);
  }
}

async function clientFor(target: A2aTarget, signal: AbortSignal, seen: Seen): Promise<Client> {
  const origin = new URL(target.url).origin;
  // every request carries the token and the call's deadline, and stays on the provider's origin;
  // the last HTTP status tells refusals apart
  const fetchImpl: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (target.token !== null) headers.set("authorization", `Bearer ${target.token}`);
    if (target.traceparent) headers.set("traceparent", target.traceparent);
    try {
      const response = await outboundFetch(input, { ...init, headers, signal }, { origin });
      seen.status = response.status;
      return response;
    } catch (error) {
      if (error instanceof OutboundRefused) seen.refused = error.message;
      throw error;
    }
  };
  const cardResolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
  const transport = new PinnedJsonRpcTransportFactory(
    { fetchImpl, legacyCompat: { enabled: true } },
    origin,
    seen,
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [transport], cardResolver }),
  );
  const key = `${target.url}\u0000${target.token ?? ""}`;
  let card = cards.get(key);
  if (!card || card.until <= Date.now()) {
    const { base, path } = cardLocation(target.url);
    card = { card: await cardResolver.resolve(base, path), until: Date.now() + CARD_TTL_MS };
    cards.set(key, card);
  }
  return factory.createFromAgentCard(card.card);
}

/** A card URL (`….json`) as it is; any other URL is the agent's base, its card in `.well-known/`. */
export function cardLocation(url: string): { base: string; path: string } {
  const parsed = new URL(url);
  if (parsed.pathname.endsWith(".json")) return { base: parsed.origin, path: parsed.pathname };
  const dir = parsed.pathname.endsWith("/") ? parsed.pathname : `${parsed.pathname}/`;
  return { base: parsed.origin, path: `${dir}.well-known/agent-card.json` };
}

function short(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
