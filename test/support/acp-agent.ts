/**
 * A small ACP agent for tests, inside workerd: `fetch` to an `acp.test` host with an `Upgrade:
 * websocket` header is answered with one end of a WebSocketPair whose other end speaks ACP
 * (JSON-RPC 2.0: initialize, session/new, session/prompt, session/cancel). Behaviour by prompt:
 *   "be long"     -> chunk "partial", stopReason max_tokens
 *   "refuse"      -> stopReason refusal
 *   "hold"        -> nothing until session/cancel, then stopReason cancelled
 *   "odd"         -> stopReason "exploded" (unknown: the run is an error)
 *   "break"       -> a JSON-RPC error for the prompt whose message echoes the Authorization header
 *   "hang up"     -> closes the connection mid-prompt (code 1011)
 *   anything else -> chunks "echo: " and the text, stopReason end_turn
 * Host `down.acp.test` answers the upgrade with HTTP 503. Every frame the agent receives is
 * recorded with the upgrade's Authorization header.
 */

export interface AcpAgentLog {
  auth: string | null;
  received: { method: string | undefined; params: unknown }[];
}

export interface AcpNet {
  connections: AcpAgentLog[];
  restore(): void;
}

export function installAcpAgent(): AcpNet {
  const real = globalThis.fetch;
  const net: AcpNet = {
    connections: [],
    restore: () => {
      globalThis.fetch = real;
    },
  };
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (!url.hostname.endsWith("acp.test")) return real(input, init);
    if (url.hostname === "down.acp.test") return new Response("overloaded", { status: 503 });
    if (request.headers.get("upgrade") !== "websocket") return new Response("upgrade only", { status: 426 });
    const log: AcpAgentLog = { auth: request.headers.get("authorization"), received: [] };
    net.connections.push(log);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    server.accept();
    serve(server, log);
    return new Response(null, { status: 101, webSocket: client });
  }) as typeof fetch;
  return net;
}

function serve(socket: WebSocket, log: AcpAgentLog): void {
  const send = (message: Record<string, unknown>): void =>
    socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
  let held: number | null = null;
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; method?: string; params?: any };
    log.received.push({ method: message.method, params: message.params });
    const { id, method, params } = message;
    switch (method) {
      case "initialize":
        return send({ id, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } });
      case "session/new":
        return send({ id, result: { sessionId: "sess-1" } });
      case "session/cancel":
        if (held !== null) send({ id: held, result: { stopReason: "cancelled" } });
        return;
      case "session/prompt": {
        const text = String(params?.prompt?.[0]?.text ?? "");
        const chunk = (t: string): void =>
          send({
            method: "session/update",
            params: {
              sessionId: "sess-1",
              update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
            },
          });
        if (text === "hold") {
          chunk("working");
          held = id ?? null;
          return;
        }
        if (text === "hang up") return socket.close(1011, "agent crashed");
        if (text === "break") return send({ id, error: { code: -32603, message: `internal: ${log.auth}` } });
        if (text === "be long") {
          chunk("partial");
          return send({ id, result: { stopReason: "max_tokens" } });
        }
        if (text === "refuse") return send({ id, result: { stopReason: "refusal" } });
        if (text === "odd") return send({ id, result: { stopReason: "exploded" } });
        // an update of another kind is ignored by the client
        send({
          method: "session/update",
          params: { sessionId: "sess-1", update: { sessionUpdate: "plan", entries: [] } },
        });
        chunk("echo: ");
        chunk(text);
        return send({ id, result: { stopReason: "end_turn" } });
      }
    }
  });
}
