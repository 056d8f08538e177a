import type { Usage } from "../../src/contract/events";
import { addUsage, type Spend, spendOf, subtractUsage } from "../../src/core/usage";
import type { FlagName, Flags } from "./flags";

/**
 * A session's token usage over its lifetime, kept beside its log (flags): what its own model steps
 * used, what the one-shot runs it started reported with their results, and what its local children
 * reported of their subtrees as their runs and epochs ended. Written in the transaction that
 * appends the step or settles the run or epoch, so the totals never drift from the log and a
 * child's report is counted exactly once.
 */
export class UsageTotals {
  constructor(readonly flags: Flags) {}

  /** This session's own model calls: its steps' and its compactions'. */
  own(): Usage | undefined {
    return this.#read("usage");
  }

  /** The part of `own()` its compactions' summarizing calls used (shown apart). */
  compaction(): Usage | undefined {
    return this.#read("usage:compaction");
  }

  /**
   * What this session spent that counts against its tree's budget: its own model calls and its
   * runs on other deployments and agents (a local child's spending is the child's own: it reports
   * it to the budget's owner itself, session/tree-budget.ts).
   */
  spend(): Spend {
    return spendOf(addUsage(this.own(), this.#read("usage:remote")));
  }

  /**
   * This session and every local session below it: its own steps plus what its local children
   * reported of their subtrees (each child counts its own children the same way).
   */
  subtree(): Usage | undefined {
    return addUsage(this.own(), this.#read("usage:below"));
  }

  /** The part of `subtree()` this session has not yet reported to its parent. */
  unreported(): Usage | undefined {
    return subtractUsage(this.subtree(), this.#read("usage:reported"));
  }

  addOwn(usage: Usage): void {
    this.flags.set("usage", JSON.stringify(addUsage(this.own(), usage)));
  }

  /** A compaction's summarizing call: counted as its own (usage and budget) and apart. */
  addCompaction(usage: Usage): void {
    this.addOwn(usage);
    this.flags.set("usage:compaction", JSON.stringify(addUsage(this.compaction(), usage)));
  }

  /**
   * A run's result reported `usage`: counted when the run was on another deployment or agent (a
   * local child's is its own, and reaches this session as its subtree's report, `addBelow`).
   */
  addRuns(usage: Usage, local: boolean): void {
    if (!local) this.flags.set("usage:remote", JSON.stringify(addUsage(this.#read("usage:remote"), usage)));
  }

  /** A local child's run or epoch ended, reporting this much of its subtree's usage. */
  addBelow(usage: Usage): void {
    this.flags.set("usage:below", JSON.stringify(addUsage(this.#read("usage:below"), usage)));
  }

  /** Inside the transaction that sends `unreported()` to the parent: it is reported now. */
  markReported(): void {
    const subtree = this.subtree();
    if (subtree) this.flags.set("usage:reported", JSON.stringify(subtree));
  }

  #read(name: FlagName): Usage | undefined {
    const raw = this.flags.get(name);
    return raw === undefined ? undefined : (JSON.parse(raw) as Usage);
  }
}
