import { A2A_PROTOCOL_VERSION, type AgentCard } from "@a2a-js/sdk";
import { A2A_ENDPOINT_PATH } from "./endpoint";

/** The bearer scheme's name in the card (the deployment's admin or tenant tokens). */
const SCHEME = "bearer";

/** A2A 0.3 clients (the SDK's compatibility layer answers them at the same endpoint). */
const LEGACY_PROTOCOL_VERSION = "0.3";

/**
 * This deployment as an A2A agent: its JSON-RPC endpoint under `apiRoot` (where the API is
 * served: PUBLIC_URL when set, else the request's origin and the base path), A2A 1.0 first and
 * 0.3 after it, streaming without push notifications, bearer authentication, and one skill: a
 * task is a session of the default agent.
 */
export function agentCard(apiRoot: string, version: string): AgentCard {
  const url = `${apiRoot}${A2A_ENDPOINT_PATH}`;
  const binding = (protocolVersion: string) => ({
    url,
    protocolBinding: "JSONRPC",
    tenant: "",
    protocolVersion,
  });
  return {
    name: "subagents-edge",
    description:
      "A durable agent runtime on Cloudflare Workers: each task is a session of its default agent, " +
      "which can delegate to subagents; a follow-up message on a task continues that session.",
    supportedInterfaces: [binding(A2A_PROTOCOL_VERSION), binding(LEGACY_PROTOCOL_VERSION)],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [SCHEME]: {
        scheme: {
          $case: "httpAuthSecurityScheme",
          value: {
            description: "The deployment's admin token or a tenant's token",
            scheme: "Bearer",
            bearerFormat: "",
          },
        },
      },
    },
    securityRequirements: [{ schemes: { [SCHEME]: { list: [] } } }],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "session",
        name: "Agent session",
        description:
          "Runs the message as a turn of a durable agent session (its model, tools and subagents) " +
          "and answers with the turn's final message.",
        tags: ["agent", "delegation"],
        examples: [],
        inputModes: ["text/plain", "application/json"],
        outputModes: ["text/plain"],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}
