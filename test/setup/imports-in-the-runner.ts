// @ts-expect-error: the Workers pool's internal module (what cloudflare:test's helpers are built on) has no public types
import { runInRunnerObject } from "cloudflare:test-internal";

/**
 * A setup file of every Workers project (vitest.config.ts): each `import()` a module makes runs
 * whole inside the pool's runner object, as the pool already runs its own import of the Worker's
 * `main`. A deployed Worker serves `import()` from its upload inside the isolate, with no I/O
 * (workerd compiles and evaluates the module at once), so a load belongs to no object. The pool
 * serves modules through Vite's module runner instead: every `import()` is a round trip over a
 * WebSocket the runner object owns, and callers of the same module share one pending load. Left in
 * the calling object, that load belongs to it: another object awaiting it resumes in the first
 * one's context ("Cannot perform I/O on behalf of a different Durable Object" at its first storage
 * call), and an object reset while it loads leaves everyone awaiting it waiting for good. Run in
 * the runner, whose context lives as long as the test file, each caller awaits only its own call,
 * so the objects' implementations load on first need (src/worker/lazy-parts.ts) as deployed,
 * including when an object is reset while its implementation loads (test/faults/). A module
 * already evaluated is answered at once, without a round trip, as a deployed Worker answers it.
 */

/** Vite's name for the `import()` of a module it transformed (vite/module-runner's `ssrDynamicImportKey`). */
const DYNAMIC_IMPORT = "__vite_ssr_dynamic_import__";

type DynamicImport = (specifier: string, options?: unknown) => Promise<unknown>;

interface Evaluator {
  runInlinedModule(context: Record<string, unknown>, code: string, module: unknown): Promise<unknown>;
}

/** What the module runner keeps of a module: `promise` is its evaluation, settled once `evaluated`. */
interface ModuleNode {
  evaluated: boolean;
  promise?: Promise<unknown>;
}

interface ModuleRunner {
  evaluator?: Evaluator;
  evaluatedModules?: { getModuleByUrl(url: string): ModuleNode | undefined };
}

const inRunner: (load: () => Promise<unknown>) => Promise<unknown> = runInRunnerObject;
const runner = (globalThis as { __vitest_mocker__?: { moduleRunner?: ModuleRunner } }).__vitest_mocker__
  ?.moduleRunner;
const evaluator = runner?.evaluator;
const modules = runner?.evaluatedModules;
// an upgrade of vitest or the pool that moves these must fail here, not hang a test later
if (typeof evaluator?.runInlinedModule !== "function" || typeof modules?.getModuleByUrl !== "function")
  throw new Error("imports-in-the-runner: the Workers pool's module runner is not the one this file wraps");

const wrapped = Symbol.for("subagents-edge.imports-in-the-runner");
const marked = evaluator as Evaluator & { [wrapped]?: true };
if (!marked[wrapped]) {
  marked[wrapped] = true;
  const run = evaluator.runInlinedModule.bind(evaluator);
  evaluator.runInlinedModule = (context, code, module) => {
    const load = context[DYNAMIC_IMPORT] as DynamicImport;
    if (typeof load !== "function")
      throw new Error(`imports-in-the-runner: a module's context has no ${DYNAMIC_IMPORT}`);
    const loadInRunner: DynamicImport = (specifier, options) => {
      // a module already evaluated is answered from memory, as workerd answers one (no I/O); Vite
      // hands `import()` the module's resolved URL
      const known = modules.getModuleByUrl(specifier);
      if (known?.evaluated && known.promise) return known.promise;
      return inRunner(() => load(specifier, options));
    };
    context[DYNAMIC_IMPORT] = loadInRunner;
    return run(context, code, module);
  };
}
