import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { walksInstrument } from "./test/walks/instrument.ts";
import { workersPool, workersTest } from "./vitest.config.ts";

/**
 * `npm run walks`: the walks of README "How it works" measured (test/walks/walks.test.ts), in the
 * main suite's Workers pool with every function of the product's sources recording its file when
 * its code runs (test/walks/instrument.ts). A measuring command: `npm test` never runs it. The
 * Worker loads its parts as a deployed one does (no test-only swap of modules).
 */
export default defineConfig({
  plugins: [workersPool(), walksInstrument(fileURLToPath(new URL(".", import.meta.url)))],
  test: {
    ...workersTest,
    include: ["test/walks/**/*.test.ts"],
    testTimeout: 120_000,
    // one walk at a time: a walk records every file whose code runs in the isolate
    fileParallelism: false,
    sequence: { concurrent: false },
    reporters: ["default", "./test/walks/reporter.ts"],
  },
});
