import { startA2aAgent } from "../e2e/fixtures/a2a-agent.mjs";
import { startOutboundTraps } from "./outbound-traps";

/**
 * A real A2A agent for the tests (test/e2e/fixtures/a2a-agent.mjs), built on the official SDK's
 * server side, served over HTTP by Node (vitest's globalSetup), reached by the Worker under test
 * through its ordinary outbound fetch. Its JSON-RPC endpoint (`<url>/a2a`) answers only with the
 * bearer token below (401 otherwise); its card is at `<url>/.well-known/agent-card.json`, and
 * `GET <url>/__stats` answers what it served. What it does is picked by the message text: see the
 * fixture's header comment (echo:, fail:, reject, input, slow: <ms>, hang).
 */

export const A2A_TEST_TOKEN = "a2a-test-token-7d2e51";

declare module "vitest" {
  export interface ProvidedContext {
    a2aAgent: { url: string; token: string };
  }
}

/**
 * vitest `globalSetup`: starts the agent on a free loopback port and provides its address; and,
 * beside it, the outbound-URL tests' redirecting and recording servers (outbound-traps.ts, which
 * also serve A2A cards), provided as `outboundTraps`.
 */
export default async function setup(project: {
  provide(key: "a2aAgent", value: { url: string; token: string }): void;
  provide(key: "outboundTraps", value: { home: string; trap: string }): void;
}): Promise<() => Promise<void>> {
  const agent = await startA2aAgent({ token: A2A_TEST_TOKEN });
  project.provide("a2aAgent", { url: agent.url, token: A2A_TEST_TOKEN });
  const traps = await startOutboundTraps();
  project.provide("outboundTraps", { home: traps.home, trap: traps.trap });
  return async () => {
    await Promise.all([agent.close(), traps.close()]);
  };
}
