import type { RegistryApi, SessionRpc } from "../contract/session-api";

/** The RPC surface of a session's object. Ids are addressed by name so caller-reserved ids work. */
export function sessionStub(env: Env, id: string): SessionRpc {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id)) as unknown as SessionRpc;
}

/** The deployment's one provider registry object. */
export function registryStub(env: Env): RegistryApi {
  return env.REGISTRY.get(env.REGISTRY.idFromName("registry")) as unknown as RegistryApi;
}
