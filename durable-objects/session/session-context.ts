import type { SessionHost } from "../../src/agent/host";
import type { ModelRoutes } from "../../src/agent/model-provider";
import { builtinTools } from "../../src/agent/builtin-tools";
import { McpToolSource } from "../../src/agent/mcp-tools";
import { ToolCatalog } from "../../src/agent/tool-source";
import type { Tool } from "../../src/agent/tools";
import type { TurnControl } from "../../src/agent/turn-control";
import type { SessionHeader } from "../../src/contract/session";
import type { Remote, SessionRpc } from "../../src/contract/session-api";
import type { RegistryRpc } from "../../src/contract/registry-api";
import type { LocationHint } from "../../src/core/placement";
import { logRefusal } from "../../src/core/quotas";
import type { Deployment, Protocols } from "../../src/platform/deployment";
import { protocolMissing } from "../../src/protocols/protocol";
import { defaultModelOf, pricesOf } from "../../src/platform/models";
import type { Prices } from "../../src/core/prices";
import { TreeBudget } from "../budgets/tree-budget";
import type { ObjectDirectory, ObjectHost } from "../host/port";
import type { ProviderRecord } from "../../src/providers/catalog";
import { mayUse, scopeOf } from "../../src/providers/provider-access";
import type { ChildWatch } from "../delegation/child-watch";
import { remoteSettings } from "../../src/providers/remote-protocol";
import { DelegationToolSource } from "../delegation/delegation-tool-source";
import { MCP_FACE_TOOL_NAMES } from "../../src/agent/builtin-tool-names";
import type { SessionSignals } from "../kernel/signals";
import type { SessionStores } from "../store/session-stores";

/**
 * What the parts of a session object share: its stores, its turns, its way to other objects and
 * to the registry, the deployment's tools, models and limits, and `kick` (work is due: the drive
 * loop runs). A part that calls another is handed it by the composition (session-parts.ts).
 */
export class SessionContext {
  readonly stores: SessionStores;
  /** The session's turns, as far as parts may steer them. */
  readonly turns: TurnControl;
  /** Every tool source of the session, for the tools its model sees and tool filters. */
  readonly tools: ToolCatalog<SessionHost>;
  /** The protocols this deployment speaks (MCP, A2A, ACP: each loads its code on first use). */
  readonly protocols: Protocols;
  /** The model routes this deployment serves (checked when a session or child is created). */
  readonly models: ModelRoutes;
  /** The model of a session that names none (DEFAULT_MODEL, else `scripted`). */
  readonly defaultModel: string;
  /**
   * The deployment's limits as its vars give them (absent or malformed: the default, where each is
   * read): MAX_DEPTH_CAP, MAX_CHILDREN_PER_SESSION, MAX_CONTEXT_WINDOW, and the quotas
   * (src/core/quotas.ts) MAX_SESSIONS_PER_TREE, MAX_PENDING_MESSAGES and MAX_LOG_BYTES.
   */
  readonly limits: {
    depthCap: string | undefined;
    childCap: string | undefined;
    treeCap: string | undefined;
    inboxCap: string | undefined;
    logCap: string | undefined;
    contextWindowCap: string | undefined;
  };
  /** Remote delegation: this deployment's public URL (callbacks; absent: polling only) and deadline. */
  readonly remoteSettings: { publicUrl: string | undefined; deadlineMs: number };
  /** What the deployment's models cost (MODEL_PRICES). */
  readonly prices: Prices;
  /** Spans carry what was said (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, opt-in). */
  readonly traceContent: boolean;
  /** The budget of the session's tree, and what counts against it (tree-budget.ts). */
  readonly budget: TreeBudget;
  readonly #objects: ObjectDirectory;
  readonly #signals: SessionSignals;
  readonly #watch: ChildWatch;

  constructor(
    host: ObjectHost,
    deployment: Deployment,
    stores: SessionStores,
    turns: TurnControl,
    signals: SessionSignals,
    watch: ChildWatch,
  ) {
    const { vars } = host;
    this.#objects = host.objects;
    this.#signals = signals;
    this.#watch = watch;
    this.stores = stores;
    this.turns = turns;
    this.tools = toolCatalog(host, deployment, stores);
    this.models = deployment.models(host.bindings);
    this.protocols = deployment.protocols;
    this.defaultModel = defaultModelOf(vars);
    this.limits = {
      depthCap: vars.MAX_DEPTH_CAP,
      childCap: vars.MAX_CHILDREN_PER_SESSION,
      treeCap: vars.MAX_SESSIONS_PER_TREE,
      inboxCap: vars.MAX_PENDING_MESSAGES,
      logCap: vars.MAX_LOG_BYTES,
      contextWindowCap: vars.MAX_CONTEXT_WINDOW,
    };
    this.remoteSettings = remoteSettings(vars);
    this.prices = pricesOf(vars);
    this.traceContent =
      vars.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === "true";
    this.budget = new TreeBudget(this);
  }

  header(): SessionHeader | undefined {
    return this.stores.header.get();
  }

  /** The tools the session's model sees now, under its tool filter. */
  visibleTools(): Promise<Tool<unknown, SessionHost>[]> {
    return this.tools.visible(this.header());
  }

  /** A session's object; the location hint matters only to the call that creates it. */
  session(id: string, locationHint?: LocationHint): Remote<SessionRpc> {
    return this.#objects.session(id, locationHint);
  }

  /**
   * The provider `name` if this session may start children through it (its tenant's, and named by
   * its `providers` option if it has one); undefined, exactly as for an unknown name, otherwise.
   */
  async provider(name: string): Promise<ProviderRecord | undefined> {
    const record = await this.#objects.registry().resolve(name);
    const header = this.header();
    return record && header && mayUse(record, scopeOf(header)) ? record : undefined;
  }

  /** The deployment's registry object (providers, the directory of top-level sessions). */
  registry(): Remote<RegistryRpc> {
    return this.#objects.registry();
  }

  /** Work is due: the drive loop runs without waiting (steps, outbox, repairs, settlement). */
  kick(): void {
    this.#signals.workDue();
  }

  /** A local child began working for this session: its watchdog (child-watch.ts) is armed. */
  childStarted(): void {
    this.#watch.started();
  }
}

/** Where the model's tools come from, in the order it sees them. */
function toolCatalog(
  host: ObjectHost,
  deployment: Deployment,
  stores: SessionStores,
): ToolCatalog<SessionHost> {
  const { objects } = host;
  return new ToolCatalog<SessionHost>([
    builtinTools(),
    ...deployment.toolSources(host.bindings),
    // a server that cannot be listed is in the log once per failure streak, while the log has room
    new McpToolSource({
      sdk: deployment.protocols.mcp?.client ?? (() => Promise.reject(new Error(protocolMissing("mcp")))),
      unavailable: (failure) => {
        if (!logRefusal(stores.log.bytes(), host.vars.MAX_LOG_BYTES))
          stores.transact(() => stores.log.append("mcp/server-unavailable", failure));
      },
    }),
    new DelegationToolSource(() => objects.registry().list(), objects.registryKey),
    // the MCP face's own tools: offered to its client, never to the model, but a filter may name them
    { name: "mcp-face", knows: (tool) => MCP_FACE_TOOL_NAMES.has(tool), offer: () => [] },
  ]);
}
