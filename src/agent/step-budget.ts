import { BudgetRefusal, reservationHoldMs, stepBudgetKey, worstCase } from "./budget";
import type { CompactorPorts } from "./compactor";

/**
 * The turn driver's hooks into the session's budget (README "Budgets"), when it has one: a model
 * step's worst case is reserved before its call, what the step spent is settled after it, and a
 * reservation a crash left behind is settled before anything else runs. Without a budget every
 * hook does nothing.
 */
export class StepBudget {
  readonly #ports: Pick<CompactorPorts, "stores" | "settings" | "budget">;

  constructor(ports: Pick<CompactorPorts, "stores" | "settings" | "budget">) {
    this.#ports = ports;
  }

  /**
   * Whether a reservation is held for a call that is over (a crash cut its settle short): it is
   * settled before anything else runs, so a reservation never outlives its call.
   */
  owesSettle(): boolean {
    return this.#ports.budget?.owesSettle(this.#stepKey()) === true;
  }

  /** Reports what the session spent and releases what its reservations did not use. */
  async settle(): Promise<void> {
    await this.#ports.budget?.settle();
  }

  /**
   * Reserves a model call's worst case (`inputTokens` plus the session's output limit) from the
   * session's budget; throws `BudgetRefusal` when it does not fit. An owner out of reach is
   * thrown as `OwnerUnreachable`: the step fails as a crash would, and runs again.
   */
  async reserve(key: string, inputTokens: number): Promise<void> {
    const { budget } = this.#ports;
    if (!budget) return;
    const settings = this.#ports.settings();
    const worst = worstCase(
      inputTokens,
      settings.params?.maxOutputTokens,
      settings.modelRoute,
      settings.prices,
    );
    let refused: string | undefined;
    try {
      refused = await budget.reserve(key, worst, reservationHoldMs(settings.policy));
    } catch (error) {
      throw new OwnerUnreachable(error);
    }
    if (refused) throw new BudgetRefusal(refused);
  }

  /** The budget key of the model step the open turn would make next (undefined while none is open). */
  #stepKey(): string | undefined {
    const loop = this.#ports.stores.loop.get();
    return loop.openTurn === null ? undefined : stepBudgetKey(loop.openTurn, loop.step);
  }
}

/** The budget's owner could not be reached to reserve a call: the step fails as a crash would. */
export class OwnerUnreachable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}
