import { type BudgetLedger, type BudgetState, budgetSpent, reservationRefusal } from "../../src/agent/budget";
import { compact } from "../../src/core/compact";
import { faultPoint, faultsArmed } from "../../src/core/faults";
import { addSpend, NO_SPEND, type Spend } from "../../src/core/usage";
import type { SessionHeader } from "../../src/contract/session";
import type { BudgetAnswer, BudgetDraw, Remote, SessionRpc } from "../../src/contract/session-api";
import type { SessionStores } from "../store/session-stores";

/** What a tree's budget reads and whom it asks: the session's header, its stores, other sessions. */
export interface TreeBudgetPorts {
  header(): SessionHeader | undefined;
  readonly stores: Pick<SessionStores, "usage" | "budgetDraws" | "budgetReservations" | "flags" | "transact">;
  session(id: string): Remote<SessionRpc>;
}

/**
 * A tree's shared budget, a cap (README "Prices and budgets"). The session created with a budget
 * owns it: it keeps what every session of its tree last reported spending (store/budget-draws.ts)
 * and what each one's model call under way reserved (store/budget-reservations.ts). Every
 * session below carries the same limits and the owner's id. Before each model call a session
 * reserves the call's worst case from the owner, reporting its own spending with it; the owner
 * grants it only while the budget less what was spent and what other calls hold covers it. After
 * the call the session reports its spending again and its reservation is released. So sessions
 * running side by side never promise more than the budget holds: the tree stops within the
 * budget plus what the estimates missed.
 *
 * Durable on both sides: the owner's row is keyed by the session and names the call, so a
 * reservation asked for again (a retry, a step re-run after a crash) is the one held, and a
 * settle applies once (a spending figure only grows; a release names its call). The session
 * keeps the key it holds (flag `budget:held`) until it has settled, so a crash between the call
 * and the settle is settled when it comes back, before anything else runs. A reservation whose
 * session never comes back stops counting when its hold (the longest its call could take) ends.
 */
export class TreeBudget implements BudgetLedger {
  readonly #ctx: TreeBudgetPorts;
  /** Below the owner: the tree's total it last learnt, and its own spending when it learnt it. */
  #learnt: { tree: Spend; own: Spend } | undefined;

  constructor(ctx: TreeBudgetPorts) {
    this.#ctx = ctx;
  }

  state(): BudgetState | undefined {
    const budget = this.#ctx.header()?.options.budget;
    if (!budget) return undefined;
    const limit = compact({ tokens: budget.tokens, usd: budget.usd });
    const own = this.#ctx.stores.usage.spend();
    if (budget.owner === undefined)
      return { limit, used: addSpend(own, this.#ctx.stores.budgetDraws.total()), shared: false };
    const learnt = this.#learnt;
    const used = learnt
      ? addSpend(learnt.tree, { tokens: own.tokens - learnt.own.tokens, usd: own.usd - learnt.own.usd })
      : own;
    return { limit, used, shared: true };
  }

  /**
   * Why this session may start no child on its budget, or undefined: a child starts only while
   * the remainder (less the reservations this session knows of) covers `worst`, its first
   * step's worst case.
   */
  startRefusal(worst: Spend): string | undefined {
    const header = this.#ctx.header();
    const owns = header?.options.budget !== undefined && header.options.budget.owner === undefined;
    const held = owns ? this.#ctx.stores.budgetReservations.held(Date.now()) : NO_SPEND;
    return reservationRefusal(this.state(), held, worst, "a child's first step");
  }

  async reserve(key: string, worst: Spend, holdMs: number): Promise<string | undefined> {
    const header = this.#ctx.header();
    const budget = header?.options.budget;
    if (!header || !budget) return undefined;
    const { stores } = this.#ctx;
    await faultPoint(header.id, "before-reserve");
    if (budget.owner === undefined) {
      const refusal = stores.transact(() => {
        const refused = this.#reserveAt(header.id, { key, worst, holdMs });
        if (refused) stores.flags.delete("budget:held");
        else stores.flags.set("budget:held", key);
        return refused;
      });
      this.#drawn(header.id);
      await faultPoint(header.id, "after-reserve");
      return refusal;
    }
    const answer = await this.#ask(budget.owner, header.id, { reserve: { key, worst, holdMs } });
    // an owner that is gone (its tree is being deleted) holds nothing: the last figure decides
    if (!answer) return budgetSpent(this.state());
    stores.transact(() => {
      if (answer.refused) stores.flags.delete("budget:held");
      else stores.flags.set("budget:held", key);
    });
    await faultPoint(header.id, "after-reserve");
    return answer.refused;
  }

  owesSettle(current: string | undefined): boolean {
    if (!this.#ctx.header()?.options.budget) return false;
    const held = this.#ctx.stores.flags.get("budget:held");
    if (held === undefined) return false;
    // a step's compaction holds `<step>/compaction`: the step that runs it still needs it
    return current === undefined || held.split("/")[0] !== current;
  }

  async settle(): Promise<void> {
    const header = this.#ctx.header();
    const { stores } = this.#ctx;
    const held = stores.flags.get("budget:held");
    if (!header || held === undefined) return;
    const owner = header.options.budget?.owner;
    if (owner === undefined) {
      stores.transact(() => {
        stores.budgetReservations.release(header.id, held);
        stores.flags.delete("budget:held");
      });
      this.#drawn(header.id);
      await faultPoint(header.id, "after-settle");
      return;
    }
    await this.#ask(owner, header.id, { settle: held });
    await faultPoint(header.id, "after-settle");
    stores.transact(() => {
      if (stores.flags.get("budget:held") === held) stores.flags.delete("budget:held");
    });
  }

  /**
   * At the owner: `memberId` has spent `draw.spend` so far (a figure that only grows; a lower one
   * changes nothing), and reserves for its next call or settles the last. Answers the tree's
   * total, or undefined where this session owns no budget.
   */
  draw(memberId: string, draw: BudgetDraw): BudgetAnswer | undefined {
    const budget = this.#ctx.header()?.options.budget;
    if (!budget || budget.owner !== undefined) return undefined;
    const { stores } = this.#ctx;
    const refused = stores.transact(() => {
      stores.budgetDraws.record(memberId, draw.spend);
      if (draw.settle !== undefined) stores.budgetReservations.release(memberId, draw.settle);
      return draw.reserve ? this.#reserveAt(memberId, draw.reserve) : undefined;
    });
    this.#drawn(memberId);
    const used = this.state()?.used ?? NO_SPEND;
    return refused ? { used, refused } : { used };
  }

  /** At the owner, inside a transaction: `memberId`'s reservation for `key`, or why it does not fit. */
  #reserveAt(
    memberId: string,
    { key, worst, holdMs }: NonNullable<BudgetDraw["reserve"]>,
  ): string | undefined {
    const reservations = this.#ctx.stores.budgetReservations;
    const now = Date.now();
    const held = reservations.of(memberId);
    if (held?.key === key && held.expiresAt > now) return undefined; // asked again: the one it holds
    // the session's call before this one is over: what it held counts no more
    const refused = reservationRefusal(this.state(), reservations.held(now, memberId), worst);
    if (refused) reservations.release(memberId);
    else reservations.hold(memberId, { key, spend: worst, expiresAt: now + holdMs });
    return refused;
  }

  /**
   * At the owner, once a draw of `memberId` committed (its own, for the owner's calls): fault
   * point `after-draw`, told the reservation held for it now. A crash there loses the answer.
   */
  #drawn(memberId: string): void {
    const owner = this.#ctx.header()?.id;
    if (owner === undefined || !faultsArmed()) return;
    const held = this.#ctx.stores.budgetReservations.of(memberId);
    void faultPoint(owner, "after-draw", { member: memberId, ...(held ? { held } : {}) });
  }

  /** Below the owner: reports this session's spending with `draw`; rejects when the owner is out of reach. */
  async #ask(
    owner: string,
    memberId: string,
    draw: Omit<BudgetDraw, "spend">,
  ): Promise<BudgetAnswer | undefined> {
    const own = this.#ctx.stores.usage.spend();
    const answer = await this.#ctx.session(owner).drawBudget(memberId, { spend: own, ...draw });
    if (answer) this.#learnt = { tree: answer.used, own };
    return answer;
  }
}
