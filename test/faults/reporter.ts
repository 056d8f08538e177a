import type { Reporter, TestModule } from "vitest/node";
import { type SeedReport, summarize, summaryLine } from "./summary";

/**
 * Runs in the vitest process (Node), not in workerd: folds the seeds' reports (each test case's
 * `meta.faultSeed`) into the summary line and writes the same figures to test-results/faults.json.
 * The project has no Node types, so `node:*` modules are loaded dynamically with the few shapes used.
 */

interface NodeFs {
  mkdirSync(path: string, options: { recursive: boolean }): void;
  rmSync(path: string, options: { recursive: boolean; force: boolean }): void;
  writeFileSync(path: string, data: string): void;
}
interface NodeChildProcess {
  execSync(command: string, options: { encoding: "utf8"; stdio: string[] }): string;
}

const COMMAND = "npm run test:faults";

export default class FaultsReporter implements Reporter {
  #started = 0;

  onInit(): void {
    this.#started = Date.now();
  }

  async onTestRunEnd(modules: ReadonlyArray<TestModule>): Promise<void> {
    const reports: SeedReport[] = [];
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const report = (test.meta() as { faultSeed?: SeedReport }).faultSeed;
        if (report) reports.push(report);
      }
    }
    if (reports.length === 0) return;
    reports.sort((a, b) => a.seed - b.seed);
    const summary = summarize(reports, COMMAND);
    const fsSpecifier = "node:fs";
    const cpSpecifier = "node:child_process";
    const fs = (await import(fsSpecifier)) as NodeFs;
    let commit = "unknown";
    try {
      const cp = (await import(cpSpecifier)) as NodeChildProcess;
      const run = (command: string) =>
        cp.execSync(command, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
      commit = run("git rev-parse --short HEAD");
      // figures of a tree with uncommitted changes say so (they are not that commit's)
      if (run("git status --porcelain --untracked-files=no -- src durable-objects test") !== "")
        commit += " (uncommitted changes)";
    } catch {
      // not a git checkout
    }
    const line = summaryLine(summary);
    const out = {
      line,
      ...summary,
      wallSeconds: Math.round((Date.now() - this.#started) / 100) / 10,
      seedSeconds: Math.round(reports.reduce((n, r) => n + r.ms, 0) / 100) / 10,
      phaseSeconds: Object.fromEntries(
        (["setup", "ops", "drain", "check"] as const).map((p) => [
          p,
          Math.round(reports.reduce((n, r) => n + r.phases[p], 0) / 100) / 10,
        ]),
      ),
      evictBusy: reports.reduce((n, r) => n + r.evictBusy, 0),
      commit,
      generatedAt: new Date().toISOString(),
      replay: "FAULT_SEED=<n> npm run test:faults",
    };
    fs.rmSync("test-results/faults", { recursive: true, force: true }); // no stale seed files
    fs.mkdirSync("test-results/faults", { recursive: true });
    fs.writeFileSync("test-results/faults.json", `${JSON.stringify(out, null, 2)}\n`);
    for (const r of reports)
      if (r.detail) fs.writeFileSync(`test-results/faults/seed-${r.seed}.txt`, r.detail);
    const byKind = Object.entries(summary.faultsByKind)
      .map(([kind, f]) => `${kind}=${f.survived}/${f.injected}`)
      .join(" ");
    const byPoint = Object.entries(summary.faultsByPoint)
      .map(([point, f]) => `${point}=${f.injected}`)
      .join(" ");
    console.log(`\nfaults by kind (survived/injected): ${byKind}`);
    console.log(`faults by point (injected): ${byPoint}`);
    if (summary.failingSeeds.length > 0) {
      console.log(`failing seeds: ${summary.failingSeeds.map((s) => s.seed).join(", ")}`);
      console.log(
        "  (history and logs in test-results/faults/seed-<n>.txt; replay: FAULT_SEED=<n> npm run test:faults)",
      );
    }
    console.log(line);
    console.log(`(${out.wallSeconds} s; figures in test-results/faults.json)`);
  }
}
