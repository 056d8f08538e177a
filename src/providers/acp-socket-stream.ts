import type { AnyMessage, Stream } from "@agentclientprotocol/sdk";

/**
 * The socket as the SDK's message stream: one JSON-RPC message per text frame. A frame that is
 * not a JSON-RPC message, or a send that throws, is `fail`ed; the stream closes with the socket or
 * when `ended` aborts.
 */
export function socketStream(socket: WebSocket, fail: (reason: string) => void, ended: AbortSignal): Stream {
  const readable = new ReadableStream<AnyMessage>({
    start: (controller) => {
      socket.addEventListener("message", (event) => {
        let message: unknown;
        try {
          message = typeof event.data === "string" ? JSON.parse(event.data) : undefined;
        } catch {
          message = undefined;
        }
        if (message === null || typeof message !== "object") {
          fail("the agent sent a frame that is not JSON-RPC 2.0");
          return;
        }
        controller.enqueue(message as AnyMessage);
      });
      const end = (): void => {
        try {
          controller.close();
        } catch {
          // already closed
        }
      };
      socket.addEventListener("close", end);
      ended.addEventListener("abort", end);
    },
  });
  const writable = new WritableStream<AnyMessage>({
    write: (message) => {
      try {
        socket.send(JSON.stringify(message));
      } catch (error) {
        fail(`could not send (${error instanceof Error ? error.message : String(error)})`);
      }
    },
  });
  return { readable, writable };
}
