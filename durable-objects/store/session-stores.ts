import type { HostSql, HostStorage } from "../host/port";
import type { DriverStores } from "../../src/agent/driver-stores";
import type { SessionEvent } from "../../src/contract/events";
import type { SessionHeader } from "../../src/contract/session";
import { INITIAL_LOOP, type LoopState } from "../../src/core/turn-plan";
import { Epochs } from "./epochs";
import type { EventLog } from "./event-log";
import { UsageTotals } from "./usage-totals";
import { Flags } from "./flags";
import { CompactionRequests } from "./compaction-requests";
import { Approvals } from "./approvals";
import { Schedules } from "./schedules";
import { BudgetDraws } from "./budget-draws";
import { BudgetReservations } from "./budget-reservations";
import { Inbox } from "./inbox";
import { Outbox } from "./outbox";
import { Receipts } from "./receipts";
import { faultPoint, faultsArmed } from "../../src/core/faults";
import { AcpStore } from "./acp-store";
import { RemoteStore } from "./remote-store";
import { Children } from "./children";
import { FirstUseTables } from "./first-use-tables";
import type { ReadMemo } from "./read-memo";
import type { TableOnFirstUse } from "./schema";
import { Runs } from "./runs";
import { Activation } from "./activation";
import { CancelledRuns } from "./cancelled-runs";
import { ContinuableStarts } from "./continuable-starts";
import { TreeSlots } from "./tree-slots";
import { SingleRow } from "./single-row";

/**
 * The SQLite stores of one session, with `transact`: a synchronous transaction after which the
 * events it appended go to `onCommit` (the event stream's subscribers), never before they are
 * committed.
 */
export class SessionStores implements DriverStores {
  readonly sql: HostSql;
  readonly log: EventLog;
  readonly inbox: Inbox;
  readonly header: SingleRow<SessionHeader>;
  readonly runs: Runs;
  readonly children: Children;
  readonly outbox: Outbox;
  /** The envelopes this session received, per sender link (`links`, `seen`). */
  readonly receipts: Receipts;
  readonly epochs: Epochs;
  readonly flags: Flags;
  readonly usage: UsageTotals;
  /** A compaction a caller asked for, until one is written. */
  readonly compaction: CompactionRequests;
  readonly remoteRuns: RemoteStore;
  readonly acpRuns: AcpStore;
  /** A continuable child's current epoch. */
  readonly activation: Activation;
  /** What makes a continuable start idempotent (its tool call, a caller-reserved id's request). */
  readonly continuableStarts: ContinuableStarts;
  /** At a tree's root: the places sessions below its children took. */
  readonly treeSlots: TreeSlots;
  /** Cancels that outran their one-shot child's creation. */
  readonly cancelledRuns: CancelledRuns;
  /** The approvals it asked for and those its descendants asked for. */
  readonly approvals: Approvals;
  /** Messages it will receive later, once or on a cron schedule. */
  readonly schedules: Schedules;
  readonly budgetDraws: BudgetDraws;
  /** At a budget's owner: what the model calls under way in its tree reserved. */
  readonly budgetReservations: BudgetReservations;
  /** The tables created on first use (schema.ts), and the SQL of each for its store. */
  readonly tables: FirstUseTables;
  readonly #loopRow: SingleRow<LoopState>;
  readonly loop = {
    get: (): LoopState => this.#loopRow.get() ?? INITIAL_LOOP,
    set: (state: LoopState): void => this.#loopRow.set(state),
  };
  readonly #onCommit: (events: readonly SessionEvent[]) => void;

  /**
   * `created`: the schema was created just now, so every table is empty (read-memo.ts).
   * `tables`: the names of the object's tables as it opened (which first-use tables it has).
   */
  constructor(
    readonly storage: HostStorage,
    log: EventLog,
    onCommit: (events: readonly SessionEvent[]) => void,
    { created = false, tables = [] }: { created?: boolean; tables?: Iterable<string> } = {},
  ) {
    this.sql = storage.sql;
    this.log = log;
    this.#onCommit = onCommit;
    const opened = new Set(tables);
    this.tables = new FirstUseTables(this.sql, opened);
    this.header = new SingleRow<SessionHeader>(this.sql, "header");
    this.inbox = new Inbox(this.sql, this.log, this.header);
    this.runs = new Runs(this.tables.sql("runs"));
    this.children = new Children(this.tables.sql("children"));
    this.outbox = new Outbox(this.sql, this.log);
    this.receipts = new Receipts(this.tables.sql("links"), this.tables.sql("seen"));
    this.epochs = new Epochs(this.tables.sql("epochs"));
    this.flags = new Flags(this.tables.sql("flags"));
    this.usage = new UsageTotals(this.flags);
    this.compaction = new CompactionRequests(this.flags);
    this.remoteRuns = new RemoteStore(this.tables.sql("remote_runs"));
    this.acpRuns = new AcpStore(this.tables.sql("acp_runs"));
    this.activation = new Activation(this.tables.sql("activation"));
    this.continuableStarts = new ContinuableStarts(this.tables.sql("continuable_starts"));
    this.treeSlots = new TreeSlots(this.tables.sql("tree_slots"), this.flags);
    this.cancelledRuns = new CancelledRuns(this.tables.sql("cancelled_runs"));
    this.approvals = new Approvals(this.tables.sql("approvals"));
    this.schedules = new Schedules(this.tables.sql("schedules"));
    this.budgetDraws = new BudgetDraws(this.tables.sql("budget_draws"));
    this.budgetReservations = new BudgetReservations(this.tables.sql("budget_reservations"));
    this.#loopRow = new SingleRow<LoopState>(this.sql, "loop");
    if (created) {
      log.startEmpty();
      this.header.startAbsent();
      this.#loopRow.startAbsent();
      for (const store of this.#memoized()) store.memo.startEmpty();
    } else {
      // a table not created yet is empty: its store's polls need not create it to learn that
      const absent: [TableOnFirstUse, { memo: ReadMemo }][] = [
        ["runs", this.runs],
        ["epochs", this.epochs],
        ["remote_runs", this.remoteRuns],
        ["flags", this.flags],
      ];
      for (const [table, store] of absent) if (!opened.has(table)) store.memo.startEmpty();
    }
  }

  /** Every store that answers reads from a memo (read-memo.ts). */
  #memoized(): readonly { memo: ReadMemo }[] {
    return [this.runs, this.epochs, this.inbox, this.remoteRuns, this.outbox, this.flags];
  }

  /** The session's id for fault points (empty before the header exists). */
  #scope(): string {
    return this.header.get()?.id ?? "";
  }

  transact<T>(fn: () => T): T {
    let result: T;
    this.tables.began();
    try {
      result = this.storage.transactionSync(() => {
        const value = fn();
        // a storage failure at the commit: everything the transaction wrote is rolled back
        if (faultsArmed()) void faultPoint(this.#scope(), "in-transaction");
        return value;
      });
    } catch (error) {
      this.tables.rolledBack();
      this.log.rollback();
      this.header.forget();
      this.#loopRow.forget();
      // a read inside the transaction may have seen what the rollback undid
      for (const store of this.#memoized()) store.memo.changed();
      throw error;
    }
    this.tables.committed();
    this.#onCommit(this.log.takeCommitted());
    return result;
  }
}
