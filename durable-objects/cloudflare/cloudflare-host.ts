import { registryStub, sessionStub } from "../../src/platform/stubs";
import type { HostSocket, HostSockets, ObjectDirectory, ObjectHost, SocketAttachment } from "../host/port";

/**
 * A Durable Object as the host of the port (host/port.ts): its storage is the port's as it is
 * (SQLite-backed: synchronous SQL, `transactionSync`, one alarm), its WebSockets are hibernatable
 * ones (the attachment is the socket's serialized attachment), other objects are reached through
 * the Worker's namespaces (src/platform/stubs.ts, which addresses an id in its jurisdiction), and
 * the env is both the vars and the bindings. The shell (src/worker/object-shells.ts) gates the
 * start-up with `blockConcurrencyWhile`.
 */
export function cloudflareHost(ctx: DurableObjectState, env: Env): ObjectHost {
  let registryKey: string | undefined;
  const objects: ObjectDirectory = {
    session: (id, hint) => sessionStub(env, id, hint),
    registry: () => registryStub(env),
    get registryKey() {
      registryKey ??= registryStub(env).id.toString();
      return registryKey;
    },
  };
  return {
    id: ctx.id.toString(),
    storage: ctx.storage,
    sockets: hibernatableSockets(ctx),
    objects,
    vars: env,
    bindings: env,
  };
}

/** The object's hibernatable WebSockets, each seen through one `HostSocket` for as long as it lives. */
function hibernatableSockets(ctx: DurableObjectState): HostSockets {
  const seen = new WeakMap<WebSocket, HostSocket>();
  const hostSocket = (socket: WebSocket): HostSocket => {
    let found = seen.get(socket);
    if (!found) {
      found = {
        send: (message) => socket.send(message),
        close: (code, reason) => socket.close(code, reason),
        attachment: () => socket.deserializeAttachment() as SocketAttachment | null,
        attach: (value) => socket.serializeAttachment(value),
      };
      seen.set(socket, found);
    }
    return found;
  };
  return {
    accept(protocol) {
      const pair = new WebSocketPair();
      const server = pair[1];
      ctx.acceptWebSocket(server);
      const response = new Response(null, {
        status: 101,
        webSocket: pair[0],
        headers: protocol === undefined ? {} : { "sec-websocket-protocol": protocol },
      });
      return { socket: hostSocket(server), response };
    },
    open: () => ctx.getWebSockets().map(hostSocket),
    keepalive(ping, pong) {
      ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(ping, pong));
    },
  };
}
