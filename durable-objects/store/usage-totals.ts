import type { Usage } from "../../src/contract/events";
import { addUsage, tokensOf } from "../../src/core/usage";
import type { Flags } from "./flags";

/**
 * A session's token usage over its lifetime, kept beside its log (two flags): what its own model
 * steps used, and what the one-shot runs it started reported with their results. Written in the
 * transaction that appends the step or settles the run, so the totals never drift from the log.
 */
export class UsageTotals {
  constructor(readonly flags: Flags) {}

  /** This session's own model steps. */
  own(): Usage | undefined {
    return this.#read("usage");
  }

  /** The settled one-shot runs this session started, as their results reported. */
  runs(): Usage | undefined {
    return this.#read("usage:runs");
  }

  /** The tokens that count against the session's budget: its own steps' and its runs'. */
  budgetUsed(): number {
    return tokensOf(this.own()) + tokensOf(this.runs());
  }

  addOwn(usage: Usage): void {
    this.flags.set("usage", JSON.stringify(addUsage(this.own(), usage)));
  }

  addRuns(usage: Usage): void {
    this.flags.set("usage:runs", JSON.stringify(addUsage(this.runs(), usage)));
  }

  #read(name: string): Usage | undefined {
    const raw = this.flags.get(name);
    return raw === undefined ? undefined : (JSON.parse(raw) as Usage);
  }
}
