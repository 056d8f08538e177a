import type { SessionHost } from "../agent/host";
import type { ModelRoutes } from "../agent/model-provider";
import type { ToolSource } from "../agent/tool-source";
import type { Caller } from "../contract/session";
import type { ToolFilter } from "../contract/tool-filter";
import type { Protocol } from "../protocols/protocol";

/**
 * What one deployment adds to the runtime (`createSubagents` options, src/worker/): the tools,
 * the model routes and the protocols of the Worker that embeds it. Every session object, the HTTP
 * layer and the RPC entrypoint of that Worker read the same one; `bindings` is the Worker's env,
 * passed through unread by the objects (a user tool and a user model factory are called with it).
 */
export interface Deployment {
  /** The embedding Worker's tool sources, offered after the built-in tools. */
  toolSources(bindings: unknown): readonly ToolSource<SessionHost>[];
  /** Every model route the deployment serves: the built-in ones and the embedding Worker's. */
  models(bindings: unknown): ModelRoutes;
  /** Names in a tool filter that no tool of the deployment has (a session naming one is refused). */
  unknownTools(filter: ToolFilter): string[];
  /** The protocols the deployment speaks (absent: its routes answer 404, its uses are refused). */
  readonly protocols: Protocols;
}

/**
 * The protocols of a deployment, each a loader of its code: the code (and the official SDK it
 * holds) is in the Worker's bundle only if the Worker imported the protocol's entry, and loads on
 * first use.
 */
export interface Protocols {
  readonly mcp?: McpProtocol;
  readonly a2a?: A2aProtocol;
  readonly acp?: AcpProtocol;
  readonly openai?: OpenAiProtocol;
  readonly "workers-ai"?: WorkersAiProtocol;
}

/** MCP both ways: a session's MCP servers (the client) and a session's MCP face (the server). */
export interface McpProtocol extends Protocol {
  readonly protocol: "mcp";
  client(): Promise<typeof import("@modelcontextprotocol/client")>;
  server(): Promise<typeof import("@modelcontextprotocol/server")>;
}

/** A2A both ways: the deployment as an A2A agent (its face) and `a2a` providers (the client). */
export interface A2aProtocol extends Protocol {
  readonly protocol: "a2a";
  face(): Promise<A2aFace>;
  client(): Promise<typeof import("../providers/a2a-client")>;
}

/** The A2A face's protocol layer (src/http/a2a-face.ts), which its routes load on first use. */
export interface A2aFace {
  agentCardResponse(request: Request, env: Env, base: string, version: string): Response;
  a2aRpc(
    request: Request,
    env: Env,
    deployment: Deployment,
    caller: Caller & { kind: "admin" },
    base: string,
    version: string,
  ): Promise<Response>;
}

/** `openai:<model>` routes: any OpenAI-compatible server at OPENAI_BASE_URL, through the AI SDK. */
export interface OpenAiProtocol extends Protocol {
  readonly protocol: "openai";
  sdk(): Promise<typeof import("@ai-sdk/openai-compatible")>;
}

/** `workers-ai:<model>` routes: the Worker's AI binding, through the AI SDK. */
export interface WorkersAiProtocol extends Protocol {
  readonly protocol: "workers-ai";
  sdk(): Promise<typeof import("workers-ai-provider")>;
}

/** ACP: `acp` providers, runs handed to an agent over the Agent Client Protocol. */
export interface AcpProtocol extends Protocol {
  readonly protocol: "acp";
  sdk(): Promise<typeof import("@agentclientprotocol/sdk")>;
}
