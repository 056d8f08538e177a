import { type Failure, fail, type Outcome } from "../../src/contract/errors";
import type { Caller, SessionHeader } from "../../src/contract/session";
import { checkAccess, type Need } from "../../src/core/access";
import type { ObjectDirectory } from "../host/port";
import { type Call, isCallerMethod, type Method } from "./methods";

/**
 * What the dispatch needs of the object that holds a session: its parts when it holds one, a way
 * to open its storage for a call that may create it, and whether its session is being deleted.
 */
export interface DispatchTarget<P> {
  /** The session's parts, when the object holds a session. */
  current(): P | undefined;
  /** Opens the object's storage (creating its schema when it has none) and builds its parts. */
  open(): P;
  /** This instance erased the object (a deletion): nothing is created in it again by this instance. */
  erased(): boolean;
  /** The session's header, undefined while it is being deleted (it then answers 404 everywhere). */
  header(parts: P): SessionHeader | undefined;
  /** Whether the session is being deleted. */
  deleting(parts: P): boolean;
  /** A caller's request touched the object: a chance to notice owed work whose wake-up was lost. */
  touched(parts: P): void;
  readonly objects: ObjectDirectory;
}

/**
 * Runs one call of a declared method (methods.ts): a caller method after its caller is
 * authorized against the session (every method the same way, core/access.ts), a peer method with
 * its answers for a session absent, erased or being deleted. A method with nothing to await first
 * (no `prepare`, no `gate`) runs at once, in the same task as the call.
 */
export function dispatch<P>(target: DispatchTarget<P>, method: Method<P>, args: unknown[]): unknown {
  if (isCallerMethod(method)) {
    const [caller, ...rest] = args as [Caller, ...unknown[]];
    const run = () => {
      const call = authorize(target, caller, method.need);
      return call.ok ? method.run(call.value.parts, call.value.call, ...rest) : call;
    };
    return method.prepare ? method.prepare().then(run) : run();
  }
  if (target.erased() && method.erased) return method.erased(...args);
  const parts = target.current();
  const opens = parts === undefined && method.opens?.(...args) === true;
  if (parts === undefined && !opens) return method.absent(...args);
  const run = (open: P) =>
    method.deleting && target.deleting(open) ? method.deleting(...args) : method.run(open, ...args);
  if (!method.gate) return run(parts ?? target.open());
  const exists = parts !== undefined && (target.header(parts) !== undefined || target.deleting(parts));
  return method.gate({ exists, objects: target.objects }, ...args).then((refused) => {
    if (refused) return refused;
    const open = target.current() ?? (opens ? target.open() : undefined);
    return open === undefined ? method.absent(...args) : run(open);
  });
}

/** The session and its parts when `caller` may do what `need` says (a list: the next after an `UNAUTHORIZED`). */
export function authorize<P>(
  target: DispatchTarget<P>,
  caller: Caller,
  need: Need | readonly Need[],
): Outcome<{ parts: P; call: Call }> {
  const parts = target.current();
  if (parts !== undefined) target.touched(parts);
  const header = parts === undefined ? undefined : target.header(parts);
  const needs: readonly Need[] = typeof need === "string" ? [need] : need;
  let denied: Failure | undefined;
  for (const each of needs) {
    denied = checkAccess(header, caller, each);
    if (denied?.code !== "UNAUTHORIZED") break;
  }
  if (denied) return denied;
  return parts !== undefined && header !== undefined
    ? { ok: true, value: { parts, call: { caller, header } } }
    : fail("NOT_FOUND", "session not found");
}
