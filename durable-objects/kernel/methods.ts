import { type Failure, fail } from "../../src/contract/errors";
import type { Caller, SessionHeader } from "../../src/contract/session";
import type { Need } from "../../src/core/access";
import type { ObjectDirectory } from "../host/port";

/**
 * The RPC surface of a session object, declared where each feature lives: a method is a
 * declaration of who may call it and what it answers for a session that is absent or being
 * deleted, and a `run` over the session's parts. The kernel's dispatch (dispatch.ts) authorizes
 * every call and checks deletion once, for all of them; the object's RPC type (`RpcOf`) and the
 * shells' forwarding are derived from the declarations.
 */

/** What a method the Worker calls receives besides its arguments: its caller and the session it may reach. */
export interface Call {
  caller: Caller;
  header: SessionHeader;
}

/**
 * A method the registry Worker calls with an authenticated caller. `need` is what the caller must
 * be allowed (core/access.ts); a list is tried in order, the next only when the one before
 * answered `UNAUTHORIZED`. A session being deleted answers `404` like one that does not exist.
 */
export interface CallerMethod<P, A extends unknown[], R> {
  readonly need: Need | readonly Need[];
  /** Awaited before the session is read: what `run` needs loaded, so that it runs without a pause. */
  readonly prepare?: () => Promise<void>;
  readonly run: (parts: P, call: Call, ...args: A) => R;
}

/**
 * A method another object of the deployment calls (a parent, a child, the tree's root, a budget
 * member): the deployment's own binding, so no caller. It says what it answers where the object
 * holds no session (`absent`: never created, or erased), where this instance erased it
 * (`erased`, default `absent`) and while the session is being deleted (`deleting`, default: it
 * runs as for any session). `opens`: the call may create the session, so the object's storage is
 * opened for it (after its `gate`).
 */
export interface PeerMethod<P, A extends unknown[], R> {
  readonly absent: Otherwise<A, R>;
  readonly erased?: Otherwise<A, R>;
  readonly deleting?: Otherwise<A, R>;
  readonly opens?: (...args: NoInfer<A>) => boolean;
  /**
   * Awaited before the call runs (and before the storage opens for it): a failure is the answer,
   * and nothing of the call is stored. `exists`: the object holds a session already.
   */
  readonly gate?: (
    object: { exists: boolean; objects: ObjectDirectory },
    ...args: NoInfer<A>
  ) => Promise<Failure | undefined>;
  readonly run: (parts: P, ...args: A) => R;
}

/** A peer method's answer where it does not run: what `run` answers, now or later (its types come from `run`). */
type Otherwise<A extends unknown[], R> = (...args: NoInfer<A>) => Awaited<NoInfer<R>> | NoInfer<R>;

// biome-ignore lint/suspicious/noExplicitAny: a table holds methods of every argument and answer type
export type Method<P> = CallerMethod<P, any, unknown> | PeerMethod<P, any, unknown>;

/** A feature's methods by name. */
export type MethodTable<P> = Record<string, Method<P>>;

/** A method the Worker calls with its caller (the helper infers its arguments and answer). */
export function callerMethod<P, A extends unknown[], R>(
  method: CallerMethod<P, A, R>,
): CallerMethod<P, A, R> {
  return method;
}

/** A method between the deployment's objects (the helper infers its arguments and answer). */
export function peerMethod<P, A extends unknown[], R>(method: PeerMethod<P, A, R>): PeerMethod<P, A, R> {
  return method;
}

/** Whether `method` is called by the Worker with a caller. */
export function isCallerMethod<P>(method: Method<P>): method is CallerMethod<P, unknown[], unknown> {
  return "need" in method;
}

/** The RPC surface a table of methods gives the object: a caller method takes its caller first. */
export type RpcOf<T> = {
  [K in keyof T]: T[K] extends CallerMethod<infer _P, infer A, infer R>
    ? (caller: Caller, ...args: A) => R
    : T[K] extends PeerMethod<infer _P, infer A, infer R>
      ? (...args: A) => R
      : never;
};

/** The answer of a method for a session that is not there: `404 NOT_FOUND` with `message`. */
export function notFound(message: string): () => Failure {
  return () => fail("NOT_FOUND", message);
}
