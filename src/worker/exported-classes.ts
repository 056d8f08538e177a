import type { RegistryObject as Registry } from "../../durable-objects/registry/registry-object";
import {
  SESSION_METHODS as SESSION_METHOD_TABLE,
  type SessionMethods,
} from "../../durable-objects/session/session-methods";
import type { SessionObject as Session } from "../../durable-objects/session/session-object";
import type { Deployment } from "../platform/deployment";
import type { SubagentsEntrypoint as Entrypoint } from "../rpc/entrypoint";
import { lazyParts, loaded } from "./lazy-parts";
import { durableObjectShell, type EveryMethod, entrypointShell } from "./object-shells";

/**
 * The classes `createSubagents` returns for the Worker to export: shells (object-shells.ts) over
 * the session object, the registry object and the RPC entrypoint, each loading its implementation
 * when an instance first needs it. The lists are their public methods, which the compiler checks
 * against the implementations.
 */

/** The session object's own handlers; its RPC methods are the features' declarations (session-methods.ts). */
const SESSION_HANDLERS = [
  "fetch",
  "alarm",
  "webSocketMessage",
  "webSocketClose",
] as const satisfies readonly (keyof Session)[];
const SESSION_METHODS = [
  ...SESSION_HANDLERS,
  ...(Object.keys(SESSION_METHOD_TABLE) as (keyof SessionMethods)[]),
];

const REGISTRY_METHODS = [
  "list",
  "resolve",
  "register",
  "remove",
  "addSession",
  "removeSession",
  "sessions",
  "events",
] as const satisfies readonly (keyof Registry)[];

const ENTRYPOINT_METHODS = [
  "providers",
  "createSession",
  "send",
  "delete",
  "schedules",
  "schedule",
  "unschedule",
  "start",
  "interrupt",
  "compact",
  "approvals",
  "decide",
  "events",
  "describe",
  "startContinuable",
  "followup",
  "interruptChild",
  "drain",
  "listChildren",
  "listDescendants",
] as const satisfies readonly (keyof Entrypoint)[];

// a method added to an implementation and not to its list would be unreachable: a compile error
const sessionListed: EveryMethod<Session, (typeof SESSION_HANDLERS)[number] | keyof SessionMethods> = true;
const registryListed: EveryMethod<Registry, (typeof REGISTRY_METHODS)[number]> = true;
const entrypointListed: EveryMethod<Entrypoint, (typeof ENTRYPOINT_METHODS)[number]> = true;
void [sessionListed, registryListed, entrypointListed];

/**
 * The three classes of one `createSubagents` call: `deployment` gives its tools, models and
 * protocols (loaded with the first object or call that needs them), `withBindings` the env the
 * runtime reads.
 */
export function exportedClasses<E>(
  deployment: () => Promise<Deployment>,
  withBindings: (env: unknown) => Env,
) {
  const SessionObject = durableObjectShell(
    "SessionObject",
    async (ctx, env: E) => {
      const [{ SessionObject: Implementation }, { cloudflareHost }, made] = await loaded(
        ctx.id.name ?? "",
        Promise.all([lazyParts.session(), lazyParts.cloudflareHost(), deployment()]),
      );
      return Implementation.open(cloudflareHost(ctx, withBindings(env)), made);
    },
    SESSION_METHODS,
  );
  const RegistryObject = durableObjectShell(
    "RegistryObject",
    async (ctx, env: E) => {
      const [{ RegistryObject: Implementation }, { cloudflareHost }] = await loaded(
        ctx.id.name ?? "",
        Promise.all([lazyParts.registry(), lazyParts.cloudflareHost()]),
      );
      return new Implementation(cloudflareHost(ctx, withBindings(env)));
    },
    REGISTRY_METHODS,
  );
  const SubagentsEntrypoint = entrypointShell(
    "SubagentsEntrypoint",
    async (_ctx, env: E) => {
      const [{ SubagentsEntrypoint: Implementation }, made] = await Promise.all([
        lazyParts.entrypoint(),
        deployment(),
      ]);
      return new Implementation(withBindings(env), made);
    },
    ENTRYPOINT_METHODS,
  );
  return { SessionObject, RegistryObject, SubagentsEntrypoint };
}
