import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { cloudflareHost } from "../../../durable-objects/cloudflare/cloudflare-host";
import { SessionObject } from "../../../durable-objects/session/session-object";
import { CALLER_HEADER } from "../../../src/contract/session";
import { deploymentOf } from "../../../src/worker/deployment";
import { createSession, sendMessage } from "../../support/api";
import { stub } from "../../support/objects";

/**
 * The host port's sockets are optional (durable-objects/host/port.ts): a session object opened on
 * a host that keeps no WebSockets (here a Durable Object's own state and storage with the sockets
 * left out) still serves its event stream as Server-Sent Events, and answers a WebSocket request
 * with a clear refusal instead of failing.
 */

const CALLER = { [CALLER_HEADER]: JSON.stringify({ kind: "admin" }) };

describe("a session object on a host without sockets", () => {
  it("answers a WebSocket request 422 UNSUPPORTED_CAPABILITY and serves the same stream over SSE", async () => {
    const { id } = await createSession();
    await sendMessage(id, "hello over SSE");
    await runInDurableObject(stub(id), async (_instance: unknown, state: DurableObjectState) => {
      const { sockets, ...socketless } = cloudflareHost(state, env);
      expect(sockets).toBeDefined(); // the Durable Object has them; this host leaves them out
      const session = await SessionObject.open(socketless, deploymentOf([], {}, {}));

      const websocket = await session.fetch(
        new Request("https://session/events", { headers: { upgrade: "websocket", ...CALLER } }),
      );
      expect(websocket.status).toBe(422);
      expect(await websocket.json()).toEqual({
        error: {
          code: "UNSUPPORTED_CAPABILITY",
          message:
            "this host keeps no WebSockets: open the event stream as Server-Sent Events (Accept: text/event-stream)",
        },
      });

      const sse = await session.fetch(
        new Request("https://session/events?transport=sse", { headers: CALLER }),
      );
      expect(sse.status).toBe(200);
      expect(sse.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      const reader = sse.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while (!text.includes("hello over SSE")) {
        const { done, value } = await reader.read();
        if (done) break;
        text += value;
      }
      await reader.cancel();
      expect(text).toMatch(/^: stream open\n\n/);
      expect(text).toMatch(/id: \d+\nevent: user\/message\ndata: \{[^\n]*"hello over SSE"/);
    });
  });
});
