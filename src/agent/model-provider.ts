import { quote } from "../core/quote";
import type { ModelClient } from "./model";

/**
 * Serves the model routes of one prefix: `scripted`, `openai:<model>`, `workers-ai:<model>`, or a
 * user's own `<prefix>:<rest>`. A route is `prefix` alone or `prefix:rest`; `rest` is what the
 * provider gets. The durable turn driver calls the client once per model step.
 */
export interface ModelProvider {
  readonly prefix: string;
  /**
   * Whether its routes name a model after the prefix (`openai:<model>`), are the prefix alone
   * (`scripted`), or may be either (a user's prefix: `custom` and `custom:<anything>`).
   */
  readonly namesModel: boolean | "optional";
  /** Why this deployment cannot serve `prefix:rest` (a missing key or binding), or undefined. */
  problem(rest: string): string | undefined;
  /** The client for `rest`; called only for a route whose `problem` is undefined. */
  client(rest: string): ModelClient;
}

/** The model routes of a deployment: which provider serves a route, checked once at creation. */
export class ModelRoutes {
  readonly #providers: ReadonlyMap<string, ModelProvider>;

  constructor(providers: readonly ModelProvider[]) {
    const byPrefix = new Map<string, ModelProvider>();
    for (const provider of providers) {
      if (byPrefix.has(provider.prefix)) throw new Error(`model prefix ${provider.prefix} is served twice`);
      byPrefix.set(provider.prefix, provider);
    }
    this.#providers = byPrefix;
  }

  /** Why `route` cannot be served here, or undefined when it can (checked before a session exists). */
  problem(route: string): string | undefined {
    const found = this.#resolve(route);
    if (!found) {
      const known = [...this.#providers.values()].map((p) =>
        p.namesModel === "optional"
          ? `${p.prefix}[:<model>]`
          : p.namesModel
            ? `${p.prefix}:<model>`
            : p.prefix,
      );
      const listed =
        known.length > 1 ? `${known.slice(0, -1).join(", ")} or ${known.at(-1)}` : known.join("");
      return `unknown model route ${quote(route)} (use ${listed})`;
    }
    return found.provider.problem(found.rest);
  }

  /** The client of a route that passed `problem`. */
  client(route: string): ModelClient {
    const found = this.#resolve(route);
    if (!found) throw new Error(`unknown model route "${route}"`);
    return found.provider.client(found.rest);
  }

  #resolve(route: string): { provider: ModelProvider; rest: string } | undefined {
    const colon = route.indexOf(":");
    const prefix = colon < 0 ? route : route.slice(0, colon);
    const provider = this.#providers.get(prefix);
    const rest = colon < 0 ? "" : route.slice(colon + 1);
    if (!provider || (colon >= 0 && rest.length === 0)) return undefined;
    if (provider.namesModel !== "optional" && provider.namesModel !== colon >= 0) return undefined;
    return { provider, rest };
  }
}
