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
import { DELEGATION_TOOL_NAMES } from "../../src/agent/builtin-tool-names";
import type { SessionHost } from "../../src/agent/host";
import type { OfferedTool, ToolSource } from "../../src/agent/tool-source";
import { anyTool } from "../../src/agent/tools";
import type { ProviderInfo } from "../../src/contract/provider";
import type { SessionHeader } from "../../src/contract/session";
import { DEFAULT_PROVIDERS, describeProvider } from "../../src/providers/catalog";

/** How long the provider list behind the `subagent` tools may be reused (starts always re-check). */
const PROVIDER_LIST_TTL_MS = 2_000;

const CONTROL_TOOLS = [
  anyTool(sendMessageTool),
  anyTool(interruptAgentTool),
  anyTool(listAgentsTool),
  anyTool(taskOutputTool),
  anyTool(taskKillTool),
];

/**
 * The delegation tools as a tool source: one `subagent` tool per provider the session may use
 * (its `providers` option), the control tools, and the tools by which a child answers, which
 * survive any tool filter: `structured_output` for a one-shot child given an output schema,
 * `report` in continuable children.
 */
export class DelegationTools implements ToolSource<SessionHost> {
  readonly name = "delegation";
  readonly #listProviders: () => Promise<ProviderInfo[]>;
  #providers: { at: number; list: ProviderInfo[] } | undefined;

  constructor(listProviders: () => Promise<ProviderInfo[]>) {
    this.#listProviders = listProviders;
  }

  knows(tool: string): boolean {
    return DELEGATION_TOOL_NAMES.test(tool);
  }

  async offer(header: SessionHeader): Promise<OfferedTool<SessionHost>[]> {
    const allowed = header.options.providers;
    const mode = header.options.backgroundMode ?? "continuable";
    const offered: OfferedTool<SessionHost>[] = (await this.#providerList())
      .filter((p) => allowed === undefined || allowed.includes(p.name))
      .map((p, i) => ({ tool: anyTool(subagentTool(p, subagentToolName(p.name, i), mode)) }));
    for (const tool of CONTROL_TOOLS) offered.push({ tool });
    const schema = header.oneShot?.outputSchema;
    if (schema) offered.push({ tool: anyTool(structuredOutputTool(schema)), exempt: true });
    if (header.mode === "continuable") offered.push({ tool: anyTool(reportTool), exempt: true });
    return offered;
  }

  async #providerList(): Promise<ProviderInfo[]> {
    if (this.#providers && Date.now() - this.#providers.at < PROVIDER_LIST_TTL_MS)
      return this.#providers.list;
    try {
      const list = await this.#listProviders();
      this.#providers = { at: Date.now(), list };
      return list;
    } catch {
      // the registry is unreachable: offer the last known tools; a start re-checks the registry
      return this.#providers?.list ?? DEFAULT_PROVIDERS.map(describeProvider);
    }
  }
}
