import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";

/**
 * The classes a Worker exports (the two Durable Objects and the RPC entrypoint) are shells: each
 * declares the methods its callers and the platform reach, and builds its implementation (a plain
 * class of durable-objects/ or src/rpc/) the first time an instance needs it, from a module it
 * loads then. A Worker's start (its global scope: what workerd compiles before the first request)
 * then holds declarations only, and each isolate loads the parts its own events use: an isolate
 * that runs only session objects never loads the HTTP router, one that only routes requests never
 * loads the session engine (README "Benchmarks", the startup and first-request rows).
 */

/** The public methods of `T`: what the shell forwards (RPC methods and the platform's handlers). */
export type MethodName<T> = {
  [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never;
}[keyof T] &
  string;

/**
 * `true` when `Listed` names every public method of `T`: the shells' method lists are checked by
 * the compiler against their implementations, so a method added to one cannot be left unreachable.
 */
export type EveryMethod<T, Listed extends string> =
  Exclude<MethodName<T>, Listed> extends never ? true : false;

type Method = (...args: unknown[]) => unknown;

/**
 * A Durable Object class whose instance builds its implementation (`open`) before its first event
 * and hands it every call of `methods`. The build runs under `blockConcurrencyWhile` in the
 * constructor, so no request, alarm or WebSocket event reaches the instance before it is done
 * (work the implementation must do before any call, such as arming what a restart owes, belongs
 * in `open`, awaited here); a build that fails resets the instance, as a throwing constructor
 * would.
 */
export function durableObjectShell<I extends object, E>(
  name: string,
  open: (ctx: DurableObjectState, env: E) => Promise<I>,
  methods: readonly MethodName<I>[],
): new (
  ctx: DurableObjectState,
  env: E,
) => DurableObject<E> {
  class Shell extends DurableObject<E> {
    #impl: I | undefined;

    constructor(ctx: DurableObjectState, env: E) {
      super(ctx, env);
      void ctx.blockConcurrencyWhile(async () => {
        this.#impl = await open(ctx, env);
      });
    }

    static {
      // prototype methods: workerd's RPC reaches a class's methods, never an instance's own fields
      for (const method of methods)
        Object.defineProperty(Shell.prototype, method, {
          value: function forward(this: Shell, ...args: unknown[]) {
            const impl = this.#impl;
            if (impl === undefined) throw new Error(`${name}.${method}: the implementation did not load`);
            return (impl[method] as Method).apply(impl, args);
          },
          writable: true,
          configurable: true,
        });
    }
  }
  // the exported class's own name, in stack traces and profiles
  Object.defineProperty(Shell, "name", { value: name });
  return Shell;
}

/**
 * A WorkerEntrypoint class whose instance (one per call or binding use) builds its implementation
 * (`open`) on its first call of `methods` and hands it that call and the next ones.
 */
export function entrypointShell<I extends object, E>(
  name: string,
  open: (ctx: ExecutionContext, env: E) => Promise<I>,
  methods: readonly MethodName<I>[],
): new (
  ctx: ExecutionContext,
  env: E,
) => WorkerEntrypoint<E> {
  class Shell extends WorkerEntrypoint<E> {
    #impl: Promise<I> | undefined;

    static {
      for (const method of methods)
        Object.defineProperty(Shell.prototype, method, {
          value: async function forward(this: Shell, ...args: unknown[]) {
            this.#impl ??= open(this.ctx, this.env);
            const impl = await this.#impl;
            return (impl[method] as Method).apply(impl, args);
          },
          writable: true,
          configurable: true,
        });
    }
  }
  // the exported class's own name, in stack traces and profiles
  Object.defineProperty(Shell, "name", { value: name });
  return Shell;
}
