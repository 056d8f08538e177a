import { quote } from "../../../src/core/quote";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import { faultPoint } from "../../../src/core/faults";
import type { SessionContext } from "../../session/session-context";

/** Whose drain closed admission: this session's own, or the one its parent `<id>` asked for. */
export type DrainScope = "self" | `parent:${string}`;

/**
 * Draining this session's continuable children, child-first (semantics.md §6.8). A drain of the
 * whole subtree closes admission with the durable `draining` flag (its value says whose drain it
 * is: `self`, or `parent:<id>` for a drain the parent asked for, which continuable-child.ts runs)
 * and reopens it when the subtree is gone; this is the flag's one writer (`closeAdmission`,
 * `reopenAdmission`). An object reset in between leaves the flag set: the next instance sees a
 * drain cut short (`drainCutShort`) and the child side finishes it.
 */
export class Drains {
  readonly #ctx: SessionContext;
  /** Drains this instance runs right now (the durable flag alone cannot tell a live drain from a cut one). */
  #running = 0;
  /** The durable flag was read as clear since the last drain of this instance ended. */
  #knownClear = false;

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  draining(): boolean {
    return this.#ctx.stores.flags.get("draining") !== undefined;
  }

  /**
   * Inside a transaction: admission closes for a drain of `scope` (`self`, or `parent:<id>` for
   * the drain the parent `<id>` asked for), durably, so a drain cut short is finished later.
   */
  closeAdmission(scope: DrainScope): void {
    this.#ctx.stores.flags.set("draining", scope);
  }

  /** Inside a transaction: the drain ended; admission reopens. */
  reopenAdmission(): void {
    this.#ctx.stores.flags.delete("draining");
  }

  /**
   * The scope of a drain that an earlier instance began and never finished: `"self"` or
   * `"parent:<id>"`. Undefined while a drain of this instance runs, or when none was cut short.
   */
  drainCutShort(): DrainScope | undefined {
    if (this.#running > 0 || this.#knownClear) return undefined;
    const scope = this.#ctx.stores.flags.get("draining");
    // only a drain of this instance sets the flag from now on, and each one ends by clearing it
    // or (cut short by a throw) by resetting this, so the drive loop need not read it every pass
    if (scope === undefined) this.#knownClear = true;
    // "1": written by versions before the scope was kept
    return scope === "1" ? "self" : (scope as DrainScope | undefined);
  }

  /** Runs `fn` as a drain of this instance (a cut-short repair must not race it). */
  async whileDraining<T>(fn: () => Promise<T>): Promise<T> {
    this.#running++;
    try {
      return await fn();
    } finally {
      this.#running--;
      this.#knownClear = false; // read the flag again: a drain that threw may have left it set
    }
  }

  /** Drains all descendants (no ids) or selected direct children, child-first. */
  async drain(childIds?: string[]): Promise<Outcome<{ drained: string[] }>> {
    const ctx = this.#ctx;
    const { children } = ctx.stores;
    const self = ctx.header()!.id;
    const all = childIds === undefined;
    const targets = all ? children.ownedContinuable() : [...new Set(childIds)];
    const stranger = targets.find((id) => !children.has(id));
    if (stranger) return fail("UNAUTHORIZED", `${quote(stranger)} is not a child of this session`);
    // the whole-subtree drain closes admission; a drain its parent asked for has set the flag already
    const owns = all && !this.draining();
    if (owns) ctx.stores.transact(() => this.closeAdmission("self"));
    const drained: string[] = [];
    await this.whileDraining(async () => {
      try {
        await faultPoint(self, "mid-drain");
        for (const id of targets) {
          if (children.get(id)?.mode !== "continuable") continue;
          const answer = await ctx.session(id).drainFrom(self);
          if (!answer.ok) continue;
          drained.push(id, ...answer.value.drained);
          ctx.stores.transact(() => children.setState(id, "released"));
        }
      } finally {
        if (owns) ctx.stores.transact(() => this.reopenAdmission());
      }
    });
    ctx.kick();
    return ok({ drained });
  }
}
