import type { SessionHost } from "../agent/host";
import type { ModelRoutes } from "../agent/model-provider";
import type { ToolSource } from "../agent/tool-source";
import type { ToolFilter } from "../contract/tool-filter";

/**
 * What one deployment adds to the runtime (`createSubagents` options, src/worker/): the tools and
 * the model routes of the Worker that embeds it. Every session object, the HTTP layer and the RPC
 * entrypoint of that Worker read the same one; `env` is the Worker's env (a user tool and a user
 * model factory are called with it).
 */
export interface Deployment {
  /** The embedding Worker's tool sources, offered after the built-in tools. */
  toolSources(env: Env): readonly ToolSource<SessionHost>[];
  /** Every model route the deployment serves: the built-in ones and the embedding Worker's. */
  models(env: Env): ModelRoutes;
  /** Names in a tool filter that no tool of the deployment has (a session naming one is refused). */
  unknownTools(filter: ToolFilter): string[];
}
