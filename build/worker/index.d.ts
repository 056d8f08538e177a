// The types of build/worker/index.js, the build of src/index.ts (scripts/build-worker.mjs): its
// source's. worker-configuration.d.ts names this module, wrangler.toml's `main`.
export * from "../../src/index";
export { default } from "../../src/index";
