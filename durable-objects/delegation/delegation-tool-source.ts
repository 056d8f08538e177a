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
import { loadPatternEngine } from "../../src/core/json-schema-subset";
import type { SessionHost } from "../../src/agent/host";
import type { OfferedTool, ToolSource } from "../../src/agent/tool-source";
import { anyTool } from "../../src/agent/tools";
import type { ProviderInfo } from "../../src/contract/provider";
import type { SessionHeader } from "../../src/contract/session";
import { DEFAULT_PROVIDERS, describeProvider } from "../../src/providers/catalog";
import { providerList } from "../../src/providers/provider-lists";
import { mayUse, scopeOf } from "../../src/providers/provider-access";

const CONTROL_TOOLS = [
  anyTool(sendMessageTool),
  anyTool(interruptAgentTool),
  anyTool(listAgentsTool),
  anyTool(taskOutputTool),
  anyTool(taskKillTool),
];

/**
 * The delegation tools as a tool source: one `subagent` tool per provider the session may use
 * (those of its tenant its `providers` option names: provider-access.ts), the control tools, and the tools by which a child answers, which
 * survive any tool filter: `structured_output` for a one-shot child given an output schema,
 * `report` in continuable children.
 */
export class DelegationToolSource implements ToolSource<SessionHost> {
  readonly name = "delegation";
  readonly #listProviders: () => Promise<ProviderInfo[]>;
  readonly #registry: string;

  /** `registry` names the registry the list comes from (the isolate's lists are shared by it). */
  constructor(listProviders: () => Promise<ProviderInfo[]>, registry: string) {
    this.#listProviders = listProviders;
    this.#registry = registry;
  }

  knows(tool: string): boolean {
    return DELEGATION_TOOL_NAMES.test(tool);
  }

  async offer(header: SessionHeader): Promise<OfferedTool<SessionHost>[]> {
    const scope = scopeOf(header);
    const mode = header.options.backgroundMode ?? "continuable";
    const offered: OfferedTool<SessionHost>[] = (await this.#providerList())
      .filter((p) => mayUse(p, scope))
      .map((p, i) => ({ tool: anyTool(subagentTool(p, subagentToolName(p.name, i), mode)) }));
    for (const tool of CONTROL_TOOLS) offered.push({ tool });
    const schema = header.oneShot?.outputSchema;
    if (schema) {
      await loadPatternEngine(); // its patterns are matched by the linear-time engine
      offered.push({ tool: anyTool(structuredOutputTool(schema)), exempt: true });
    }
    if (header.mode === "continuable") offered.push({ tool: anyTool(reportTool), exempt: true });
    return offered;
  }

  #providerList(): Promise<ProviderInfo[]> {
    return providerList(this.#registry, this.#listProviders, () => DEFAULT_PROVIDERS.map(describeProvider));
  }
}
