import type { SessionHeader } from "../contract/session";
import type { ToolFilter } from "../contract/tool-filter";
import { filterAllows, type Tool } from "./tools";

/** A tool as a source offers it; `exempt` tools are how a child answers and survive any tool filter. */
export interface OfferedTool<Host> {
  tool: Tool<unknown, Host>;
  exempt?: boolean;
}

/**
 * A source of tools for a session's model. The runtime's own tools (`echo`) and the delegation
 * and control tools (one `subagent` tool per provider, `send_message`, ...) are sources; so are
 * the user's tools and an MCP server's tools. The model sees the union of what every source
 * offers, under the session's tool filter (semantics.md §2.3).
 */
export interface ToolSource<Host> {
  readonly name: string;
  /** Whether a tool filter may name `tool`: a name this source offers to some session. */
  knows(tool: string): boolean;
  /** The tools this source offers the session with this header. */
  offer(header: SessionHeader): Promise<readonly OfferedTool<Host>[]> | readonly OfferedTool<Host>[];
}

/** A source whose tools are the same for every session (the built-in `echo`, a user's tools). */
export function staticToolSource<Host>(
  name: string,
  tools: readonly Tool<unknown, Host>[],
): ToolSource<Host> {
  const offered = tools.map((tool) => ({ tool }));
  const names = new Set(tools.map((t) => t.name));
  if (names.size !== tools.length) throw new Error(`tool source ${name} names a tool twice`);
  return { name, knows: (tool) => names.has(tool), offer: () => offered };
}

/**
 * The tools of every source, for one session at a time: the union under its tool filter (exempt
 * tools aside). A tool offered by two sources is a wiring bug: the first one's stays, and the
 * catalog says so loudly once.
 */
export class ToolCatalog<Host> {
  readonly #sources: readonly ToolSource<Host>[];

  constructor(sources: readonly ToolSource<Host>[]) {
    this.#sources = sources;
  }

  /** Names in a filter that no source knows: a start naming one fails loudly. */
  unknownNames(filter: ToolFilter): string[] {
    return [...(filter.allow ?? []), ...(filter.deny ?? [])].filter(
      (name) => !this.#sources.some((source) => source.knows(name)),
    );
  }

  async visible(header: SessionHeader | undefined): Promise<Tool<unknown, Host>[]> {
    if (!header) return [];
    const filter = header.options.toolFilter;
    const seen = new Set<string>();
    const visible: Tool<unknown, Host>[] = [];
    for (const source of this.#sources) {
      for (const { tool, exempt } of await source.offer(header)) {
        if (seen.has(tool.name)) throw new Error(`tool ${tool.name} is offered twice (by ${source.name})`);
        seen.add(tool.name);
        if (exempt || filterAllows(filter, tool.name)) visible.push(tool);
      }
    }
    return visible;
  }
}
