import { builtinToolNames } from "../agent/builtin-tool-names";
import type { SessionHost } from "../agent/host";
import { MCP_TOOL_NAME } from "../agent/mcp-tools";
import { ModelRoutes } from "../agent/model-provider";
import type { ToolDefinition } from "../agent/tool-definition";
import type { ToolSource } from "../agent/tool-source";
import { type ModelFactory, userModelProviders } from "../agent/user-models";
import { userToolSource } from "../agent/user-tools";
import type { Deployment, Protocols } from "../platform/deployment";
import { builtinModelsOf } from "../platform/models";

/**
 * The deployment one `createSubagents` call describes (its tools, model routes and protocols), as
 * the objects, the router and the RPC entrypoint use it. Loaded with the first of them an isolate
 * builds; the tools and model routes are made once per env object (the factories run once per
 * object).
 */
export function deploymentOf<E>(
  tools: readonly ToolDefinition<E>[],
  models: Readonly<Record<string, ModelFactory<E>>>,
  protocols: Protocols,
): Deployment {
  const made = new WeakMap<object, { tools: ToolSource<SessionHost>[]; models: ModelRoutes }>();
  // the Worker's env, which the user's tools and models read as their `E` and the built-in routes
  // as the runtime's `Env` (both views of one object)
  const forEnv = (env: unknown): { tools: ToolSource<SessionHost>[]; models: ModelRoutes } => {
    let found = made.get(env as object);
    if (!found) {
      const userEnv = env as E;
      const builtin = builtinModelsOf(env as Env, protocols).filter((p) => !Object.hasOwn(models, p.prefix));
      found = {
        tools: tools.length === 0 ? [] : [userToolSource(tools, userEnv)],
        models: new ModelRoutes([...builtin, ...userModelProviders(models, userEnv)]),
      };
      made.set(env as object, found);
    }
    return found;
  };
  const userTools = new Set(tools.map((t) => t.name));
  return {
    protocols,
    toolSources: (env) => forEnv(env).tools,
    models: (env) => forEnv(env).models,
    unknownTools: (filter) =>
      [...(filter.allow ?? []), ...(filter.deny ?? [])].filter(
        // an MCP server's tools are known once listed; any mcp__<server>__<tool> name may be filtered
        (name) => !builtinToolNames.test(name) && !userTools.has(name) && !MCP_TOOL_NAME.test(name),
      ),
  };
}
