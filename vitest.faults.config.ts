import { defineConfig } from "vitest/config";
import { workersPool, workersTest } from "./vitest.config.ts";

/**
 * `npm run test:faults`: the seeded fault campaign (test/faults/) with the same Workers plugin
 * setup as the main suite, its Worker the product's plus a user tool (test/faults/worker.ts). The main config includes only test/unit and test/workers, so the two
 * never double-run. FAULT_SEEDS (how many seeds) and FAULT_SEED (replay one seed), and
 * FAR_SIDE_SEEDS / FAR_SIDE_SEED for the out-of-process half (far-side.ts), come from the
 * environment; the reporter prints the summary line and writes test-results/faults.json.
 */
export default defineConfig({
  plugins: [workersPool("./test/faults/worker.ts")],
  test: {
    ...workersTest,
    include: ["test/faults/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    provide: {
      faultSeeds: process.env.FAULT_SEEDS ?? "",
      faultSeed: process.env.FAULT_SEED ?? "",
      farSideSeeds: process.env.FAR_SIDE_SEEDS ?? "",
      farSideSeed: process.env.FAR_SIDE_SEED ?? "",
    },
    reporters: ["default", "./test/faults/reporter.ts"],
    // the runtime logs the faults the campaign injects ("driver step failed ... injected crash"): noise
    onConsoleLog: (log) => !log.includes("fault campaign"),
  },
});
