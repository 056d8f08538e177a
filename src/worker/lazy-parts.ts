/**
 * The parts of the runtime a Worker loads when an isolate first needs them, each by `import()`:
 * the objects' implementations behind the classes the Worker exports (exported-classes.ts), the
 * RPC entrypoint's, the deployment they are built with and the HTTP router (create-subagents.ts).
 * One module, so that the Workers test pool, whose module loader cannot serve an `import()` made
 * inside a Durable Object's handler reliably, swaps it for static imports
 * (test/support/eager-parts.ts); a deployed Worker loads them from its upload.
 */
export const lazyParts = {
  session: () => import("../../durable-objects/session/session-object"),
  registry: () => import("../../durable-objects/registry/registry-object"),
  entrypoint: () => import("../rpc/entrypoint"),
  deployment: () => import("./deployment"),
  router: () => import("../http/app"),
};
