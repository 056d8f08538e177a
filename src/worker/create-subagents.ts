import { builtinToolNames } from "../agent/builtin-tool-names";
import { MODEL_PREFIX, type ModelFactory, RESERVED_MODEL_PREFIXES } from "../agent/user-models";
import { TOOL_NAME, type ToolDefinition, toolInputProblem } from "../agent/tool-definition";
import { type Failure, fail } from "../contract/errors";
import { failure } from "../contract/respond";
import type { buildRouter } from "../http/app";
import { corsOrigins, preflight, withCors } from "../http/cors";
import { hostRefusal } from "../http/host-check";
import type {
  A2aProtocol,
  AcpProtocol,
  Deployment,
  McpProtocol,
  OpenAiProtocol,
  Protocols,
  WorkersAiProtocol,
} from "../platform/deployment";
import type { Protocol } from "../protocols/protocol";
import { dashboardResponse } from "./dashboard";
import { exportedClasses } from "./exported-classes";
import { lazyParts } from "./lazy-parts";

/** The options of `createSubagents` (docs/embedding.md). `E` is the Worker's env type. */
export interface SubagentsOptions<E = Cloudflare.Env> {
  /** Where the API lives: `"/agents"` serves `/agents/v1/...` and the dashboard at `/agents/`. Default `""`. */
  basePath?: string;
  /**
   * Tools offered to every session's model and its children's, under each session's tool filter.
   * Each tool states the env it needs (`defineTool`'s `E`, default `Cloudflare.Env`); they run
   * with this Worker's env.
   */
  tools?: readonly ToolDefinition<never>[];
  /** Model routes `<prefix>` / `<prefix>:<rest>` served by the Worker's own clients. */
  models?: Readonly<Record<string, ModelFactory<E>>>;
  /** The names of the two Durable Object bindings in wrangler.toml. */
  bindings?: { sessions?: string; registry?: string };
  /** Whether `basePath + "/"` serves the dashboard (default true). */
  dashboard?: boolean;
  /**
   * The protocols the runtime speaks beside its HTTP API: `mcp`, `a2a`, `acp`, `openai`,
   * `workersAi` from `subagents-edge/mcp`, `/a2a`, `/acp`, `/openai`, `/workers-ai`. Default: every
   * one with `subagents-edge/worker`, none with `subagents-edge/core` (whose Worker bundles only
   * the protocols it imports). Without one, its routes answer 404 and its uses (`mcpServers`, an
   * `a2a` or `acp` provider) are refused with `UNSUPPORTED_CAPABILITY`, and its model routes
   * (`openai:`, `workers-ai:`) like an unknown route, saying which protocol is missing.
   */
  protocols?: readonly Protocol[];
}

/**
 * A Durable Object class, as wrangler.toml binds it. Its instances are branded Durable Objects,
 * so `DurableObjectNamespace<InstanceType<...>>` (what `wrangler types` writes) accepts them.
 */
export type SubagentsObjectClass<E> = new (ctx: DurableObjectState, env: E) => Rpc.DurableObjectBranded;

/** What `createSubagents` returns: the HTTP handler and the classes the Worker exports. */
export interface Subagents<E = Cloudflare.Env> {
  /** Answers everything under `basePath` (the API, the dashboard) and `404` with the error envelope elsewhere. */
  fetch(request: Request, env: E, ctx: ExecutionContext): Promise<Response>;
  /** Export as `SessionObject` (or the class named by the `sessions` binding). */
  readonly SessionObject: SubagentsObjectClass<E>;
  /** Export as `RegistryObject` (or the class named by the `registry` binding). */
  readonly RegistryObject: SubagentsObjectClass<E>;
  /** The service-binding entrypoint (api.md, "RPC"): export it to call the runtime from another Worker. */
  readonly SubagentsEntrypoint: new (
    ctx: ExecutionContext,
    env: E,
  ) => Rpc.WorkerEntrypointBranded;
  /** The base path, normalized (`""` or `/segment...` without a trailing slash). */
  readonly basePath: string;
}

const BASE_PATH = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)*$/;

/**
 * The runtime inside a Worker: its HTTP API (under `basePath`), its Durable Object classes and
 * its RPC entrypoint, with the Worker's own tools and models and the `protocols` it is given
 * (none by default: `subagents-edge/core`; `subagents-edge/worker` defaults to all). Misconfiguration
 * (a bad base path, a tool name taken by a built-in tool, a tool input that is not a zod object
 * schema, a model prefix that shadows `scripted`, a protocol that is not one) throws here, when
 * the Worker's module loads, never later in a turn.
 */
export function createSubagents<E = Cloudflare.Env>(options: SubagentsOptions<E> = {}): Subagents<E> {
  const basePath = normalizeBasePath(options.basePath ?? "");
  const tools = checkTools(options.tools ?? []) as readonly ToolDefinition<E>[];
  const models = checkModels(options.models ?? {});
  const bindings = {
    sessions: options.bindings?.sessions ?? "SESSIONS",
    registry: options.bindings?.registry ?? "REGISTRY",
  };
  const protocols = protocolsOf(options.protocols ?? []);
  // what the objects, the router and the entrypoint are built with: made with the first of them
  // (a Worker's start loads nothing but declarations: exported-classes.ts). Values are kept, never
  // promises: the objects of an isolate share them, and workerd ties a promise to the request that
  // made it, so a promise made by a request that is then cancelled (an object reset) would never
  // settle for the others. Each caller awaits its own load (lazy-parts.ts); a module loads once.
  let deployment: Deployment | undefined;
  const deploymentLoaded = async (): Promise<Deployment> => {
    const { deploymentOf } = await lazyParts.deployment();
    deployment ??= deploymentOf(tools, models, protocols);
    return deployment;
  };
  const withBindings = bindingsOf(bindings);
  // built by the first API request: an isolate that only runs the objects never loads it
  let router: ReturnType<typeof buildRouter> | undefined;
  const dashboard = options.dashboard ?? true;
  const { SessionObject, RegistryObject, SubagentsEntrypoint } = exportedClasses<E>(
    deploymentLoaded,
    withBindings,
  );

  return {
    basePath,
    SessionObject,
    RegistryObject,
    SubagentsEntrypoint,
    async fetch(request, env, ctx) {
      // before routing, on every path: the Host check, then CORS preflights (unlisted: 403)
      const vars = env as Settings;
      const strangeHost = hostRefusal(request, vars.ALLOWED_HOSTS);
      if (strangeHost) return strangeHost;
      const origins = corsOriginsOf(vars.CORS_ORIGINS);
      const answered = preflight(request, origins);
      if (answered) return answered;
      const path = new URL(request.url).pathname;
      if (path !== basePath && !path.startsWith(`${basePath}/`))
        return failure(fail("NOT_FOUND", "no such route"));
      const response = await serve(request, env, ctx, path);
      return origins.size === 0 ? response : withCors(request, response, origins);
    },
  };

  /** One request under the base path: the dashboard's files, else the API. */
  async function serve(request: Request, env: E, ctx: ExecutionContext, path: string): Promise<Response> {
    if (dashboard && !path.startsWith(`${basePath}/v1/`)) {
      const page = await dashboardResponse(request, path, basePath);
      if (page) return page;
    }
    const weakToken = adminTokenProblem((env as Settings).ADMIN_TOKEN);
    if (weakToken) return failure(weakToken);
    const unbound = missingBinding(env, bindings);
    if (unbound) return failure(unbound);
    if (router === undefined) {
      const [{ buildRouter: build }, made] = await Promise.all([lazyParts.router(), deploymentLoaded()]);
      // (never resolved through a promise: itty-router's router is a Proxy with a `then` of its own)
      router ??= build(made, basePath);
    }
    return router.fetch(request, withBindings(env), ctx);
  }
}

/**
 * `500 MISCONFIGURED` when the env lacks a Durable Object binding the runtime was told to use
 * (wrangler.toml binds the classes under other names, or `bindings` names them wrongly). Only the
 * first request can tell (the module loads without an env), so the message says what to change:
 * the binding, the `bindings` option that names it, and the Durable Object bindings the env has.
 */
function missingBinding(env: unknown, bindings: { sessions: string; registry: string }): Failure | undefined {
  const source = env as Record<string, unknown>;
  const role = (["sessions", "registry"] as const).find((r) => source[bindings[r]] === undefined);
  if (role === undefined) return undefined;
  const className = role === "sessions" ? "SessionObject" : "RegistryObject";
  const namespaces = Object.keys(source).filter((key) => {
    const value = source[key] as { idFromName?: unknown; get?: unknown } | null;
    return typeof value?.idFromName === "function" && typeof value.get === "function";
  });
  const has = namespaces.length === 0 ? "none" : namespaces.join(", ");
  return fail(
    "MISCONFIGURED",
    `the Durable Object binding "${bindings[role]}" is not in the Worker's env: bind the runtime's ${className} ` +
      `class under that name in wrangler.toml, or tell the runtime the name you bound it under with ` +
      `createSubagents({ bindings: { ${role}: "<your binding>" } }) (this env's Durable Object bindings: ${has})`,
  );
}

/** The optional vars `fetch` reads of the Worker's env (whatever its type `E`). */
interface Settings {
  ADMIN_TOKEN?: string;
  ALLOWED_HOSTS?: string;
  CORS_ORIGINS?: string;
}

/** CORS_ORIGINS, parsed once per value. */
let corsCache: { raw: string | undefined; origins: ReadonlySet<string> } | undefined;
function corsOriginsOf(raw: string | undefined): ReadonlySet<string> {
  if (corsCache === undefined || corsCache.raw !== raw) corsCache = { raw, origins: corsOrigins(raw) };
  return corsCache.origins;
}

/** The shortest admin token the Worker accepts: a shorter one could be guessed. */
const MIN_ADMIN_TOKEN_LENGTH = 16;

/** ADMIN_TOKEN's verdict, decided (and a refusal logged) once per isolate per value. */
let adminTokenCache: { raw: string | undefined; problem: Failure | undefined } | undefined;

/**
 * Why the API refuses to run with this ADMIN_TOKEN (every API request answers it, 500 MISCONFIGURED): a token
 * shorter than 16 characters is refused rather than accepted as a guessable one. Unset: no admin,
 * and no problem (session tokens still work). The token itself is never logged or answered.
 */
function adminTokenProblem(raw: string | undefined): Failure | undefined {
  if (adminTokenCache !== undefined && adminTokenCache.raw === raw) return adminTokenCache.problem;
  let problem: Failure | undefined;
  if (raw !== undefined && raw !== "" && raw.length < MIN_ADMIN_TOKEN_LENGTH) {
    problem = fail(
      "MISCONFIGURED",
      `ADMIN_TOKEN is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters, so the API refuses every request: set a longer one (for example \`openssl rand -hex 32\`)`,
    );
    console.error(problem.message);
  }
  adminTokenCache = { raw, problem };
  return problem;
}

function normalizeBasePath(raw: string): string {
  const base = raw.replace(/\/+$/, "");
  if (!BASE_PATH.test(base) || base.split("/").some((segment) => segment === "." || segment === ".."))
    throw new TypeError(
      `createSubagents: basePath "${raw}" is not a path like "/agents" (or "" for the root)`,
    );
  return base;
}

function checkTools(tools: readonly ToolDefinition<never>[]): readonly ToolDefinition<never>[] {
  const seen = new Set<string>();
  for (const tool of tools) {
    const name = tool?.name;
    if (typeof name !== "string" || !TOOL_NAME.test(name))
      throw new TypeError(`createSubagents: tool name ${JSON.stringify(name)} must match ${TOOL_NAME}`);
    if (builtinToolNames.test(name) || name.startsWith("mcp__"))
      throw new TypeError(`createSubagents: tool name "${name}" is taken by a built-in tool`);
    if (seen.has(name)) throw new TypeError(`createSubagents: two tools are named "${name}"`);
    if (typeof tool.run !== "function")
      throw new TypeError(`createSubagents: tool "${name}" is not made by defineTool (input, run)`);
    const problem = toolInputProblem(tool.input);
    if (problem) throw new TypeError(`createSubagents: tool "${name}": ${problem}`);
    seen.add(name);
  }
  return tools;
}

function checkModels<E>(
  models: Readonly<Record<string, ModelFactory<E>>>,
): Readonly<Record<string, ModelFactory<E>>> {
  for (const [prefix, factory] of Object.entries(models)) {
    if (!MODEL_PREFIX.test(prefix))
      throw new TypeError(`createSubagents: model prefix "${prefix}" must match ${MODEL_PREFIX}`);
    if (RESERVED_MODEL_PREFIXES.includes(prefix))
      throw new TypeError(`createSubagents: the model prefix "${prefix}" is the runtime's own`);
    if (typeof factory !== "function")
      throw new TypeError(`createSubagents: models.${prefix} must be a function (env) => ModelClient`);
  }
  return models;
}

/** The `protocols` option as the deployment holds it: one of each, each made by its entry. */
function protocolsOf(list: readonly Protocol[]): Protocols {
  if (!Array.isArray(list))
    throw new TypeError(
      "createSubagents: protocols must be an array, like [mcp, a2a] (subagents-edge/mcp, ...)",
    );
  const protocols: {
    mcp?: McpProtocol;
    a2a?: A2aProtocol;
    acp?: AcpProtocol;
    openai?: OpenAiProtocol;
    "workers-ai"?: WorkersAiProtocol;
  } = {};
  for (const item of list) {
    const name = (item as Partial<Protocol> | null)?.protocol;
    const made =
      (name === "mcp" && isLoader(item, "client", "server")) ||
      (name === "a2a" && isLoader(item, "face", "client")) ||
      ((name === "acp" || name === "openai" || name === "workers-ai") && isLoader(item, "sdk"));
    if (!made)
      throw new TypeError(
        "createSubagents: a protocol must be mcp, a2a, acp, openai or workersAi as subagents-edge/mcp, /a2a, /acp, /openai or /workers-ai export it",
      );
    if (protocols[name] !== undefined)
      throw new TypeError(`createSubagents: the ${name} protocol is given twice`);
    Object.assign(protocols, { [name]: item });
  }
  return protocols;
}

function isLoader(item: object, ...loaders: string[]): boolean {
  return loaders.every((key) => typeof (item as Record<string, unknown>)[key] === "function");
}

/**
 * The env the runtime reads: the Worker's, with the two Durable Object namespaces under the names
 * the runtime uses (`SESSIONS`, `REGISTRY`) when the Worker binds them under other names.
 */
function bindingsOf(bindings: { sessions: string; registry: string }): (env: unknown) => Env {
  // the one place the Worker's env (the user's `E`) is read as the runtime's: the runtime reads
  // only its optional vars and the two namespaces, checked at the entry (`fetch`)
  if (bindings.sessions === "SESSIONS" && bindings.registry === "REGISTRY") return (env) => env as Env;
  const bound = new WeakMap<object, Env>();
  return (env) => {
    const source = env as Record<string, unknown>;
    let view = bound.get(source);
    if (!view) {
      view = Object.create(source, {
        SESSIONS: { value: source[bindings.sessions], enumerable: true },
        REGISTRY: { value: source[bindings.registry], enumerable: true },
      }) as Env;
      bound.set(source, view);
    }
    return view;
  };
}
