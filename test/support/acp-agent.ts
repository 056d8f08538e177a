import {
  agent,
  type AnyMessage,
  methods,
  type PermissionOption,
  type PermissionOptionKind,
  type RequestPermissionOutcome,
  type RequestPermissionRequest,
  RequestError,
  type Stream,
} from "@agentclientprotocol/sdk";

/**
 * An ACP agent for tests inside workerd, on the official ACP SDK's agent side: `fetch` to an
 * `acp.test` host with an `Upgrade: websocket` header is answered with one end of a
 * WebSocketPair whose other end is an SDK agent app. Behaviour by prompt:
 *   "be long"     -> chunk "partial", stopReason max_tokens
 *   "refuse"      -> stopReason refusal
 *   "hold"        -> chunk "working", then nothing until session/cancel, then stopReason cancelled
 *   "odd"         -> stopReason "exploded" (unknown: the run is an error)
 *   "break"       -> a JSON-RPC error for the prompt whose message echoes the Authorization header
 *   "hang up"     -> closes the connection mid-prompt (code 1011)
 *   "write <p> <t>" -> asks permission (session/request_permission, a tool call of kind edit
 *                    with options allow-once "yes" and reject-once "no") before it "writes" <t>
 *                    to <p>: answers "wrote <p>" when allowed, "not allowed: <outcome>" otherwise
 *   "permit <kinds> <p>" -> asks permission to write <p> with one option per kind of the
 *                    comma-separated <kinds> (allow_once, allow_always, reject_once, reject_always),
 *                    each option's id its kind: answers "chose <optionId>", or on the `cancelled`
 *                    outcome ends with stopReason cancelled (what ACP asks after session/cancel)
 *   anything else -> chunks "echo: " and the text, stopReason end_turn
 * On `agent.acp.test` the session is always `sess-1` and `session/load` is not offered. On
 * `load.acp.test` each session has its own id and is kept (like an agent that saves sessions to
 * disk): `initialize` offers `loadSession`, and `session/load` replays the session's history as
 * `session/update` notifications before it answers. Host `down.acp.test` answers the upgrade with
 * HTTP 503. Every message the agent receives is recorded with the upgrade's Authorization header,
 * and every answer to its permission requests with the request's tool call id.
 */

export interface AcpAgentLog {
  host: string;
  auth: string | null;
  received: { method: string | undefined; params: unknown }[];
  /** The client's answers to this connection's permission requests, as they arrived. */
  permissions: { toolCallId: string; outcome: RequestPermissionOutcome }[];
}

export interface AcpNet {
  connections: AcpAgentLog[];
  restore(): void;
}

/** Sessions the `load.acp.test` agent keeps: what was said in each, in order. */
const saved = new Map<string, { role: "user" | "agent"; text: string }[]>();

export function installAcpAgent(): AcpNet {
  const real = globalThis.fetch;
  const net: AcpNet = {
    connections: [],
    restore: () => {
      globalThis.fetch = real;
    },
  };
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    // the URL first: a Request built from `input` would take its body from the call passed on
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!url.hostname.endsWith("acp.test")) return real(input, init);
    const request = new Request(input, init);
    if (url.hostname === "down.acp.test") return new Response("overloaded", { status: 503 });
    if (request.headers.get("upgrade") !== "websocket") return new Response("upgrade only", { status: 426 });
    const log: AcpAgentLog = {
      host: url.hostname,
      auth: request.headers.get("authorization"),
      received: [],
      permissions: [],
    };
    net.connections.push(log);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    server.accept();
    serve(server, log, url.hostname === "load.acp.test");
    return new Response(null, { status: 101, webSocket: client });
  }) as typeof fetch;
  return net;
}

/** The server end of the socket as the SDK's message stream, recording what arrives. */
function streamOf(socket: WebSocket, log: AcpAgentLog): Stream {
  const readable = new ReadableStream<AnyMessage>({
    start(controller) {
      socket.addEventListener("message", (event) => {
        const message = JSON.parse(String(event.data)) as AnyMessage & { method?: string; params?: unknown };
        if ("method" in message) log.received.push({ method: message.method, params: message.params });
        controller.enqueue(message);
      });
      socket.addEventListener("close", () => {
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
    },
  });
  const writable = new WritableStream<AnyMessage>({
    write(message) {
      try {
        socket.send(JSON.stringify(message));
      } catch {
        // the client went away
      }
    },
  });
  return { readable, writable };
}

function serve(socket: WebSocket, log: AcpAgentLog, keepsSessions: boolean): void {
  const held = new Map<string, () => void>();
  const app = agent({ name: "workerd-test-agent" });
  app.onRequest(methods.agent.initialize, ({ params }) => ({
    protocolVersion: params.protocolVersion,
    agentCapabilities: { loadSession: keepsSessions },
    authMethods: [],
  }));
  app.onRequest(methods.agent.session.new, () => {
    if (!keepsSessions) return { sessionId: "sess-1" };
    const sessionId = `load-${crypto.randomUUID()}`;
    saved.set(sessionId, []);
    return { sessionId };
  });
  app.onRequest(methods.agent.session.load, async ({ params, client }) => {
    const history = saved.get(params.sessionId);
    if (!keepsSessions || !history) throw new RequestError(-32002, `no session ${params.sessionId}`);
    for (const said of history)
      await client.notify(methods.client.session.update, {
        sessionId: params.sessionId,
        update: {
          sessionUpdate: said.role === "user" ? "user_message_chunk" : "agent_message_chunk",
          content: { type: "text", text: said.text },
        },
      });
    return {};
  });
  app.onNotification(methods.agent.session.cancel, ({ params }) => held.get(params.sessionId)?.());
  app.onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const text = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
    const history = saved.get(sessionId);
    history?.push({ role: "user", text });
    const chunk = async (t: string): Promise<void> => {
      history?.push({ role: "agent", text: t });
      await client.notify(methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
      });
    };
    if (text === "hold") {
      await chunk("working");
      await new Promise<void>((resolve) => held.set(sessionId, resolve));
      return { stopReason: "cancelled" };
    }
    if (text === "hang up") {
      socket.close(1011, "agent crashed");
      return new Promise<never>(() => {});
    }
    if (text === "break") throw new RequestError(-32603, `internal: ${log.auth}`);
    const ask = async (
      path: string,
      rawInput: unknown,
      options: PermissionOption[],
    ): Promise<RequestPermissionOutcome> => {
      const toolCallId = `write-${path}`;
      const answer = await client.request(methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId, title: `Write ${path}`, kind: "edit", rawInput },
        options,
      } satisfies RequestPermissionRequest);
      log.permissions.push({ toolCallId, outcome: answer.outcome });
      return answer.outcome;
    };
    const permit = /^permit (\S+) (\S+)$/.exec(text);
    if (permit) {
      const kinds = permit[1]!.split(",") as PermissionOptionKind[];
      const outcome = await ask(
        permit[2]!,
        { path: permit[2] },
        kinds.map((kind) => ({ optionId: kind, name: kind.replace("_", " "), kind })),
      );
      if (outcome.outcome === "cancelled") return { stopReason: "cancelled" };
      await chunk(`chose ${outcome.optionId}`);
      return { stopReason: "end_turn" };
    }
    const write = /^write (\S+) (.*)$/s.exec(text);
    if (write) {
      const outcome = await ask(write[1]!, { path: write[1], text: write[2] }, [
        { optionId: "yes", name: "Allow once", kind: "allow_once" },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ]);
      await chunk(
        outcome.outcome === "selected" && outcome.optionId === "yes"
          ? `wrote ${write[1]}`
          : `not allowed: ${outcome.outcome === "selected" ? outcome.optionId : outcome.outcome}`,
      );
      return { stopReason: "end_turn" };
    }
    if (text === "be long") {
      await chunk("partial");
      return { stopReason: "max_tokens" };
    }
    if (text === "refuse") return { stopReason: "refusal" };
    if (text === "odd") return { stopReason: "exploded" as "end_turn" };
    // an update of another kind is ignored by the client
    await client.notify(methods.client.session.update, {
      sessionId,
      update: { sessionUpdate: "plan", entries: [] },
    });
    await chunk("echo: ");
    await chunk(text);
    return { stopReason: "end_turn" };
  });
  app.connect(streamOf(socket, log));
}
