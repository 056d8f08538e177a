import { faultPoint, faultsArmed } from "../core/faults";

/**
 * The parts of the runtime a Worker loads when an isolate first needs them, each by `import()`:
 * the objects' implementations behind the classes the Worker exports (exported-classes.ts), the
 * RPC entrypoint's, the deployment they are built with and the HTTP router (create-subagents.ts).
 * The tests load them the same way (test/setup/imports-in-the-runner.ts says how the Workers test
 * pool serves an `import()` made inside an object).
 */
export const lazyParts = {
  session: () => import("../../durable-objects/session/session-object"),
  registry: () => import("../../durable-objects/registry/registry-object"),
  /** The host the objects open on: a Durable Object's state and the Worker's env (host/port.ts). */
  cloudflareHost: () => import("../../durable-objects/cloudflare/cloudflare-host"),
  entrypoint: () => import("../rpc/entrypoint"),
  deployment: () => import("./deployment"),
  router: () => import("../http/app"),
};

/**
 * `load`, an object's implementation loading (started by the caller), once it loaded. While it is
 * in flight the object passes its `in-load` fault point (`scope`: its name, as its other points'
 * scope), where the fault campaign resets it (test/faults/resets-while-loading.test.ts).
 */
export async function loaded<T>(scope: string, load: Promise<T>): Promise<T> {
  if (faultsArmed()) {
    // a reset at the point leaves the load to settle unobserved
    load.catch(() => {});
    await faultPoint(scope, "in-load");
  }
  return load;
}
