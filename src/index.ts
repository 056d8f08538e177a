/**
 * This repository's own Worker (`npm start`, the tests, `wrangler deploy`): the runtime through
 * its public entry, exactly as an embedding Worker uses it (docs/embedding.md), with no tools or
 * models of its own and the API at the root.
 */
import type { RegistryObject as RegistryObjectClass } from "../durable-objects/registry/registry-object";
import type { SessionObject as SessionObjectClass } from "../durable-objects/session/session-object";
import { createSubagents } from "./worker";

const subagents = createSubagents<Env>();

export const { SessionObject, RegistryObject, SubagentsEntrypoint } = subagents;
// The classes' RPC surfaces (their implementations', which the exported shells forward every
// method to), for the typed stubs of `Env` (worker-configuration.d.ts names these).
export type SessionObject = SessionObjectClass & Rpc.DurableObjectBranded;
export type RegistryObject = RegistryObjectClass & Rpc.DurableObjectBranded;

export default { fetch: subagents.fetch } satisfies ExportedHandler<Env>;
