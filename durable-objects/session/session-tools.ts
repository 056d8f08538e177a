import {
  interruptAgentTool,
  listAgentsTool,
  reportTool,
  sendMessageTool,
} from "../../src/agent/control-tools";
import {
  structuredOutputTool,
  subagentTool,
  subagentToolName,
  taskKillTool,
  taskOutputTool,
} from "../../src/agent/delegation-tools";
import type { SessionHost } from "../../src/agent/host";
import type { Tool, ToolRegistry } from "../../src/agent/tools";
import type { SessionHeader } from "../../src/contract/session";
import { DEFAULT_PROVIDERS, describeProvider, type ProviderInfo } from "../../src/providers/catalog";

/** How long the provider list behind the `subagent` tools may be reused (starts always re-check). */
const PROVIDER_LIST_TTL_MS = 2_000;

/**
 * The tools a session's model sees: the static registry, one `subagent` tool per configured
 * provider, the control tools, and the tools that exist only in some children (`structured_output`
 * with an output schema, `report` in continuable children; both survive any tool filter, since
 * they are how a child answers).
 */
export class SessionTools {
  #providers: { at: number; list: ProviderInfo[] } | undefined;

  constructor(
    readonly registry: ToolRegistry<SessionHost>,
    readonly listProviders: () => Promise<ProviderInfo[]>,
  ) {}

  async visible(header: SessionHeader | undefined): Promise<Tool<unknown, SessionHost>[]> {
    if (!header) return [];
    const allowed = header.options.providers;
    const mode = header.options.backgroundMode ?? "continuable";
    const delegation = (await this.#providerList())
      .filter((p) => allowed === undefined || allowed.includes(p.name))
      .map((p, i) => subagentTool(p, subagentToolName(p.name, i), mode) as Tool<unknown, SessionHost>);
    const control = [
      sendMessageTool,
      interruptAgentTool,
      listAgentsTool,
      taskOutputTool,
      taskKillTool,
    ] as Tool<unknown, SessionHost>[];
    const filter = header.options.toolFilter;
    const visible = [...this.registry.visible(undefined), ...delegation, ...control].filter(
      (t) =>
        (filter?.allow === undefined || filter.allow.includes(t.name)) && !filter?.deny?.includes(t.name),
    );
    const schema = header.oneShot?.outputSchema;
    if (schema) visible.push(structuredOutputTool(schema));
    if (header.mode === "continuable") visible.push(reportTool as Tool<unknown, SessionHost>);
    return visible;
  }

  async #providerList(): Promise<ProviderInfo[]> {
    if (this.#providers && Date.now() - this.#providers.at < PROVIDER_LIST_TTL_MS)
      return this.#providers.list;
    try {
      const list = await this.listProviders();
      this.#providers = { at: Date.now(), list };
      return list;
    } catch {
      // the registry is unreachable: offer the last known tools; a start re-checks the registry
      return this.#providers?.list ?? DEFAULT_PROVIDERS.map(describeProvider);
    }
  }
}
