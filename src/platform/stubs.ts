import { type Jurisdiction, jurisdictionOfId, type LocationHint } from "../core/placement";

/**
 * The RPC surface of a session's object. Ids are addressed by name so caller-reserved ids work;
 * an id that names a jurisdiction (core/placement.ts) is addressed in that jurisdiction's
 * namespace, so every Worker and object reaches the same object for the same id. The location
 * hint matters only when the call creates the object.
 */
export type SessionStub = ReturnType<Env["SESSIONS"]["get"]>;
export type RegistryStub = ReturnType<Env["REGISTRY"]["get"]>;

export function sessionStub(env: Env, id: string, locationHint?: LocationHint): SessionStub {
  const jurisdiction = jurisdictionOfId(id);
  const namespace = jurisdiction === undefined ? env.SESSIONS : restricted(env.SESSIONS, jurisdiction);
  const objectId = namespace.idFromName(id);
  const stub =
    locationHint === undefined ? namespace.get(objectId) : namespace.get(objectId, { locationHint });
  return stub;
}

/** The deployment's one provider registry object. */
export function registryStub(env: Env): RegistryStub {
  return env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
}

/**
 * The namespace confined to a jurisdiction. workerd (wrangler dev, tests) does not implement
 * jurisdictions and says so; there the plain namespace stands in (one machine has one location
 * anyway). Any other failure is not papered over.
 */
function restricted(namespace: Env["SESSIONS"], jurisdiction: Jurisdiction): Env["SESSIONS"] {
  if (localOnly) return namespace;
  try {
    return namespace.jurisdiction(jurisdiction);
  } catch (error) {
    if (!(error instanceof Error) || !/not implemented in workerd/i.test(error.message)) throw error;
    localOnly = true;
    return namespace;
  }
}

let localOnly = false;
