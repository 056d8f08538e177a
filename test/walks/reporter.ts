import type { Reporter, TestModule } from "vitest/node";
import { FOLDED, type WalkReport, walkText } from "./fold";

/**
 * Runs in the vitest process (Node), not in workerd: prints each walk the tests measured (their
 * `meta.walk`) and writes them to test-results/walks.json. `node:*` modules are loaded
 * dynamically with the few shapes used, as the fault campaign's reporter does.
 */

interface NodeFs {
  mkdirSync(path: string, options: { recursive: boolean }): void;
  writeFileSync(path: string, data: string): void;
}
interface NodeChildProcess {
  execSync(command: string, options: { encoding: "utf8"; stdio: string[] }): string;
}

export default class WalksReporter implements Reporter {
  async onTestRunEnd(modules: ReadonlyArray<TestModule>): Promise<void> {
    const walks: WalkReport[] = [];
    for (const module of modules)
      for (const test of module.children.allTests()) {
        const walk = test.meta().walk;
        if (walk) walks.push(walk);
      }
    if (walks.length === 0) return;
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
      if (run("git status --porcelain --untracked-files=no -- src durable-objects") !== "")
        commit += " (uncommitted changes)";
    } catch {
      // not a git checkout
    }
    const out = {
      counted: `every file of src/ and durable-objects/ whose code ran (entered, resumed or a class field initialized), once; ${FOLDED.join(" and ")} folded into their callers`,
      commit,
      generatedAt: new Date().toISOString(),
      walks: walks.map((w) => ({ ...w, count: w.files.length, foldedCount: w.folded.length })),
    };
    fs.mkdirSync("test-results", { recursive: true });
    fs.writeFileSync("test-results/walks.json", `${JSON.stringify(out, null, 2)}\n`);
    console.log(`\n${walks.map(walkText).join("\n\n")}\n\nwalks at ${commit}: test-results/walks.json`);
    console.log(walks.map((w) => `${w.name}: ${w.files.length} files`).join("; "));
  }
}
