import * as registry from "../../durable-objects/registry/registry-object";
import * as session from "../../durable-objects/session/session-object";
import * as router from "../../src/http/app";
import * as entrypoint from "../../src/rpc/entrypoint";
import * as deployment from "../../src/worker/deployment";
import type { lazyParts as LazyParts } from "../../src/worker/lazy-parts";

/**
 * src/worker/lazy-parts.ts as the Workers test pool runs it (vitest.config.ts's `eagerParts`): the
 * same parts, imported statically. The pool loads a module through Vite's module runner, whose
 * `import()` from inside a Durable Object's handler goes through the test runner's own object
 * and may resume in another object's context (the fault campaign's aborts and resets then leave
 * an object's start waiting on it for good); a deployed Worker imports from its upload, inside the
 * isolate. The lazy loading itself is tested where the Worker runs as deployed: under wrangler dev
 * (test/e2e) and in the startup benchmark.
 */
export const lazyParts: typeof LazyParts = {
  session: () => Promise.resolve(session),
  registry: () => Promise.resolve(registry),
  entrypoint: () => Promise.resolve(entrypoint),
  deployment: () => Promise.resolve(deployment),
  router: () => Promise.resolve(router),
};
