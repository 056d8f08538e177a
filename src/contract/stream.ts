/**
 * The event stream's WebSocket subprotocol. A client may offer it (browsers offer it next to
 * `bearer.<token>`, their only way to send a token); the server answers it only when it was
 * offered, because RFC 6455 4.1 makes a client fail a handshake that names a subprotocol it did not
 * ask for (Node's and Python's standard clients do).
 */
export const STREAM_PROTOCOL = "subagents.v1";

/** Whether a `Sec-WebSocket-Protocol` request header offers {@link STREAM_PROTOCOL}. */
export function offersStreamProtocol(header: string | null): boolean {
  return header?.split(",").some((p) => p.trim() === STREAM_PROTOCOL) ?? false;
}

/**
 * The keepalive of the WebSocket form: a client may send the text frame `ping` at any time and
 * gets `pong` back (answered by the platform without waking the session's object); every other
 * frame the server sends is one JSON event.
 */
export const KEEPALIVE_PING = "ping";
export const KEEPALIVE_PONG = "pong";
