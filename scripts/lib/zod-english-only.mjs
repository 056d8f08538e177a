// An esbuild plugin of the Worker's build (scripts/build-worker.mjs) and of the benchmark's split
// bundle (bench/lib/worker.mjs).
/**
 * zod's `locales` namespace (its error messages in some fifty languages, 358 KiB) is re-exported by
 * the zod modules the runtime imports, so an isolate would compile all of it with its first schema.
 * The runtime and its libraries use English alone (zod's default, and `en` imported by name), so
 * the namespace is English alone here: `z.locales.en` is still there, the others are not.
 */
export function zodEnglishOnly() {
  return {
    name: "zod-english-only",
    setup(build) {
      build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]node_modules[\\/]zod[\\/]v4[\\/]/.test(args.importer)
          ? { path: "zod-locales-en", namespace: "zod-english-only", pluginData: args.resolveDir }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "zod-english-only" }, (args) => ({
        contents: 'export { default as en } from "../locales/en.js";',
        resolveDir: args.pluginData,
        loader: "js",
      }));
    },
  };
}
