import type { SessionApi } from "../contract/session-api";

/** The RPC surface of a session's object. Ids are addressed by name so caller-reserved ids work. */
export function sessionStub(env: Env, id: string): SessionApi {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id)) as unknown as SessionApi;
}
