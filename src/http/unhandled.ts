import { type Failure, fail } from "../contract/errors";
import { isOverloaded } from "../core/overloaded";

/**
 * The answer to an error no route handled. A deployment mistake its operator can fix is named
 * (`500 MISCONFIGURED`, with what to change); an object the platform reports overloaded (too much
 * work queued) is `503 OVERLOADED`, for the caller to retry after a pause; anything else is
 * `500 INTERNAL "internal error"`, whose details stay in the Worker's log.
 */

/**
 * workerd's words (as a caller of the object receives them) when a Durable Object class has no
 * SQLite storage: the migration that created it said `new_classes`, not `new_sqlite_classes`.
 */
const NO_SQLITE_STORAGE = /SQL is not enabled for this Durable Object class/i;

export const MISSING_SQLITE_MIGRATION =
  "the runtime's Durable Object classes have no SQLite storage: wrangler.toml must create them " +
  "(SessionObject and RegistryObject, or the classes your bindings name) in a [[migrations]] entry " +
  'with new_sqlite_classes = ["SessionObject", "RegistryObject"], not new_classes (a class already ' +
  "deployed with key-value storage cannot be converted: migrate to new class names)";

export function unhandledFailure(error: unknown): Failure {
  const message = error instanceof Error ? error.message : String(error);
  if (NO_SQLITE_STORAGE.test(message)) return fail("MISCONFIGURED", MISSING_SQLITE_MIGRATION);
  if (isOverloaded(error)) {
    return fail("OVERLOADED", "a Durable Object of this deployment is overloaded: retry after a pause");
  }
  return fail("INTERNAL", "internal error");
}
