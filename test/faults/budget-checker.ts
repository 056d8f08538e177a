import type { Spend } from "../../src/core/usage";

/**
 * The budget campaign's checker (budget-reservations.test.ts): what a tree's sessions logged,
 * what its budget's owner counts and still holds, and the reservations the sessions were granted
 * (observed at the `after-reserve` fault point), against the rules of a budget that is a cap
 * (README "Prices and budgets"). Pure: it reads plain data and answers what broke.
 *
 * - **Within the budget plus the estimates' misses.** The tree's spending (every model call's
 *   usage in its sessions' logs) stays within the budget plus the margin: the sum, over the logged
 *   calls, of what each used beyond the worst case its reservation held (`max(0, used - reserved)`,
 *   in tokens and in dollars apart).
 * - **No call without a reservation.** Every logged call ran on a reservation granted for its key:
 *   a step's `<turn>.<step>` (its turn's number, and how many steps of that turn came before it),
 *   a compaction's the same with `/compaction` (`idle.<turns>/compaction` outside a turn).
 * - **Counted exactly once.** The owner's figure for each session below it is that session's
 *   logged usage, and the owner's total is the whole tree's.
 * - **Nothing left held.** After the drain the owner holds no reservation row (expired or not: every
 *   session of the campaign came back and settled) and no session keeps a `budget:held` key.
 * - **Refused as BUDGET_EXCEEDED.** A turn that ended for its budget carries the code
 *   `BUDGET_EXCEEDED`, and one with that code ended for its budget; a start refused is refused
 *   with that code.
 */

export interface BudgetEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** One session of the tree, its owner among them. */
export interface BudgetMember {
  id: string;
  /** How the violations name it (`owner`, `c3`). */
  name: string;
  log: readonly BudgetEvent[];
  /** What the owner's `budget_draws` row counts for it (undefined: no row; the owner has none). */
  drawn?: Spend;
  /** The key its `budget:held` flag still names, if any. */
  held?: string;
}

/** A reservation a session was granted (first grant of its key wins: a re-ask is the same one). */
export interface Granted {
  member: string;
  key: string;
  worst: Spend;
}

export interface BudgetWorld {
  limit: { tokens?: number; usd?: number };
  ownerId: string;
  members: readonly BudgetMember[];
  granted: readonly Granted[];
  /** The owner's `budget_reservations` rows after the drain. */
  rowsLeft: readonly { member: string; key: string }[];
  /** What the owner's view says the tree used (`GET /v1/sessions/:id` `budget.used`/`usedUsd`). */
  ownerFigure: Spend;
  /** The answers to the children's starts (201 or 202: accepted). */
  starts: readonly { status: number; code?: string }[];
}

export interface BudgetReport {
  violations: string[];
  spent: Spend;
  /** What the estimates missed: the spending allowed past the budget. */
  margin: Spend;
}

/** Dollars are summed in floating point (and rounded by the runtime): equal within this. */
const USD_EPSILON = 1e-6;

/** One logged model call: the reservation key it ran on and what it used. */
export interface LoggedCall {
  key: string;
  spend: Spend;
}

function spendOf(usage: unknown): Spend {
  const u = usage as { inputTokens?: number; outputTokens?: number; costUsd?: number } | undefined;
  return { tokens: (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0), usd: u?.costUsd ?? 0 };
}

/** The model calls a session's log records (steps and summaries), each with its reservation key. */
export function loggedCalls(log: readonly BudgetEvent[]): LoggedCall[] {
  const calls: LoggedCall[] = [];
  let turn: number | undefined;
  let lastTurn = 0;
  let step = 0;
  for (const e of log) {
    if (e.type === "turn/start") {
      turn = Number(e.data.turn);
      lastTurn = turn;
      step = 0;
    } else if (e.type === "turn/end") {
      turn = undefined;
    } else if (e.type === "assistant/message") {
      calls.push({ key: `${turn}.${step}`, spend: spendOf(e.data.usage) });
      step++;
    } else if (e.type === "context/compacted" && e.data.usage !== undefined) {
      const key = turn === undefined ? `idle.${lastTurn}/compaction` : `${turn}.${step}/compaction`;
      calls.push({ key, spend: spendOf(e.data.usage) });
    }
  }
  return calls;
}

function add(a: Spend, b: Spend): Spend {
  return { tokens: a.tokens + b.tokens, usd: a.usd + b.usd };
}

const NONE: Spend = { tokens: 0, usd: 0 };

/** Dollars as a message shows them (to the micro-dollar, without float noise). */
function usdOf(n: number): string {
  return `$${Math.round(n * 1e6) / 1e6}`;
}

export function checkBudget(world: BudgetWorld): BudgetReport {
  const violations: string[] = [];
  const nameOf = new Map(world.members.map((m) => [m.id, m.name]));
  const name = (id: string) => nameOf.get(id) ?? id;
  const reserved = new Map<string, Spend>();
  for (const g of world.granted) {
    const at = `${g.member} ${g.key}`;
    if (!reserved.has(at)) reserved.set(at, g.worst);
  }

  let spent = NONE;
  let margin = NONE;
  for (const member of world.members) {
    let own = NONE;
    for (const call of loggedCalls(member.log)) {
      own = add(own, call.spend);
      const worst = reserved.get(`${member.id} ${call.key}`);
      if (!worst) {
        violations.push(`${member.name}: model call ${call.key} ran without a reservation`);
        continue;
      }
      margin = add(margin, {
        tokens: Math.max(0, call.spend.tokens - worst.tokens),
        usd: Math.max(0, call.spend.usd - worst.usd),
      });
    }
    spent = add(spent, own);
    if (member.id !== world.ownerId) {
      const drawn = member.drawn ?? NONE;
      if (drawn.tokens !== own.tokens || Math.abs(drawn.usd - own.usd) > USD_EPSILON)
        violations.push(
          `${member.name}: the owner counts ${drawn.tokens} tokens (${usdOf(drawn.usd)}) for it, its log ${own.tokens} (${usdOf(own.usd)})`,
        );
    }
    if (member.held !== undefined) violations.push(`${member.name}: still holds budget key ${member.held}`);
    for (const e of member.log) {
      if (e.type !== "turn/end") continue;
      const forBudget = String(e.data.error ?? "").startsWith("BUDGET_EXCEEDED");
      const coded = e.data.code === "BUDGET_EXCEEDED";
      if (forBudget && !coded)
        violations.push(
          `${member.name}: turn ${String(e.data.turn)} ended for its budget without BUDGET_EXCEEDED`,
        );
      if (coded && !forBudget)
        violations.push(
          `${member.name}: turn ${String(e.data.turn)} ended BUDGET_EXCEEDED for another cause`,
        );
    }
  }

  const { tokens, usd } = world.limit;
  if (tokens !== undefined && spent.tokens > tokens + margin.tokens)
    violations.push(
      `the tree spent ${spent.tokens} tokens: over its budget of ${tokens} plus the estimates' misses (${margin.tokens})`,
    );
  if (usd !== undefined && spent.usd > usd + margin.usd + USD_EPSILON)
    violations.push(
      `the tree spent ${usdOf(spent.usd)}: over its budget of $${usd} plus the estimates' misses (${usdOf(margin.usd)})`,
    );
  if (
    world.ownerFigure.tokens !== spent.tokens ||
    (usd !== undefined && Math.abs(world.ownerFigure.usd - spent.usd) > USD_EPSILON)
  )
    violations.push(
      `the owner's figure is ${world.ownerFigure.tokens} tokens (${usdOf(world.ownerFigure.usd)}), the logs' ${spent.tokens} (${usdOf(spent.usd)})`,
    );
  for (const row of world.rowsLeft)
    violations.push(`the owner still holds ${name(row.member)}'s reservation for ${row.key}`);
  for (const start of world.starts)
    if (start.status >= 300 && start.code !== "BUDGET_EXCEEDED")
      violations.push(
        `a start was refused ${start.status} ${start.code ?? "(no code)"}, not BUDGET_EXCEEDED`,
      );
  return { violations, spent, margin };
}
