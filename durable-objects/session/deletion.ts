import { faultPoint } from "../../src/core/faults";
import type { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import type { SessionPart } from "./part";
import type { SessionSchedules } from "./schedules";
import type { SessionContext } from "./session-context";

/** Why a session is being deleted: a caller's DELETE, its parent's deletion, or retention. */
export type DeletionCause = "caller" | "parent" | "retention";

/** The `deleting` flag's value: how and since when. */
interface DeletionState {
  cause: DeletionCause;
  since: number;
}

/** The cause in the `turn/end` of a turn a deletion stopped. */
export const DELETION_CAUSE = "the session is being deleted";

/** The diagnostic of a run whose child was deleted. */
const CHILD_DELETED = "the child was deleted";

/** How often a deleting session asks its children whether they are gone. */
const CHILD_POLL_MS = 1_000;

/**
 * How long a deletion waits for what it still sends to go out (the cancels of its runs on other
 * deployments and agents: remote, A2A, ACP are cancelled, never deleted; how its approvals ended,
 * to a parent that lives on) before it erases the session anyway.
 */
const OWED_GRACE_MS = 30_000;

/** What the deletion needs of the object that holds the session (the shell, session-object.ts). */
export interface Eraser {
  /** Deletes every row and the alarm of the object, and forgets the session in memory. */
  erase(): Promise<void>;
}

/**
 * Deleting a session and its whole tree (README "Deleting sessions"). `mark` (inside the request
 * that deletes, for every member of the tree before the answer) makes the session answer 404
 * everywhere from then on and ends its work in the same transaction (the turn, approvals,
 * schedules, queued messages, runs); then, in the drive loop, resumable after any crash because
 * the mark is durable: wait until every local child has erased itself, tell the parent (a descendant deleted on its
 * own) or the directory (a top-level session) that it is gone, and erase the object: its rows and
 * its alarm.
 */
export class Deletion implements SessionPart {
  readonly name = "deletion";
  readonly #ctx: SessionContext;
  readonly #runs: OneShotRuns;
  readonly #schedules: SessionSchedules;
  readonly #eraser: Eraser;
  /** Children this instance saw gone (an erased object stays erased). */
  readonly #gone = new Set<string>();
  #nextPoll = 0;

  constructor(ctx: SessionContext, runs: OneShotRuns, schedules: SessionSchedules, eraser: Eraser) {
    this.#ctx = ctx;
    this.#runs = runs;
    this.#schedules = schedules;
    this.#eraser = eraser;
  }

  /** Whether the session is being deleted (every route then answers 404). */
  deleting(): boolean {
    return this.#state() !== undefined;
  }

  /**
   * Marks this session and, through them, its local children as deleted (idempotent); resolves
   * once the whole tree below answers 404. The work goes on in the drive loop.
   */
  async mark(cause: DeletionCause): Promise<void> {
    // marked already: its drive loop asks its children itself (a mark cut short goes on there)
    if (this.deleting()) {
      this.#ctx.kick();
      return;
    }
    this.#stop(cause);
    const id = this.#ctx.header()!.id;
    await Promise.all(this.#children().map((childId) => this.#ctx.session(childId).deleteFrom(id)));
    this.#ctx.kick();
  }

  /**
   * A child of this session was deleted on its own (not with this session): its one-shot run
   * ends `aborted`, a continuable epoch of it ends as if it settled `aborted`, and it leaves the
   * listings. Idempotent.
   */
  childDeleted(childId: string): void {
    const { stores } = this.#ctx;
    stores.transact(() => {
      const child = stores.children.get(childId);
      if (!child) return;
      const run = stores.runs.byChildId(childId);
      if (run && run.state !== "settled")
        this.#runs.settle(run, { output: [], stopReason: "aborted", diagnostic: CHILD_DELETED });
      const epoch = child.epochRunId;
      if (epoch !== null && stores.epochs.end(epoch)) {
        stores.log.append("subagent/end", {
          runId: epoch,
          provider: child.provider,
          id: childId,
          local: true,
          stopReason: "aborted",
        });
      }
      stores.children.forget(childId);
    });
    this.#ctx.kick();
  }

  nextDue(): number | undefined {
    return this.deleting() ? Math.max(Date.now(), this.#nextPoll) : undefined;
  }

  async step(): Promise<boolean> {
    const state = this.#state();
    if (!state) return false;
    const now = Date.now();
    if (now < this.#nextPoll) return false;
    // the children first: each erases its own subtree, then itself
    const id = this.#ctx.header()!.id;
    const waiting = this.#children().filter((childId) => !this.#gone.has(childId));
    const answers = await Promise.all(
      waiting.map(async (childId) => {
        try {
          return (await this.#ctx.session(childId).deleteFrom(id)).gone ? childId : undefined;
        } catch {
          return undefined; // unreachable now: asked again at the next poll
        }
      }),
    );
    for (const childId of answers) if (childId !== undefined) this.#gone.add(childId);
    // what still has to go out: cancels of out-of-process runs, approval outcomes to a parent
    const owed =
      this.#ctx.stores.runs.unsettledRemote().length > 0 || this.#ctx.stores.outbox.nextDue() !== undefined;
    if (waiting.some((childId) => !this.#gone.has(childId)) || (owed && now < state.since + OWED_GRACE_MS)) {
      this.#nextPoll = now + CHILD_POLL_MS;
      return false;
    }
    await this.#leave(state);
    await faultPoint(id, "mid-delete");
    await this.#eraser.erase();
    return false;
  }

  /**
   * Marks the session deleted and ends its work, in one transaction: the turn (the model call in
   * flight is aborted after it), its approvals, queued and scheduled messages, its runs, and what
   * its outbox still owed its parent.
   */
  #stop(cause: DeletionCause): void {
    const { stores, turns } = this.#ctx;
    const header = this.#ctx.header()!;
    const ended = stores.transact(() => {
      const state: DeletionState = { cause, since: Date.now() };
      stores.flags.set("deleting", JSON.stringify(state));
      const closed = stores.loop.get().openTurn !== null && turns.closeForInterrupt(DELETION_CAUSE);
      stores.inbox.discardPending(DELETION_CAUSE);
      this.#schedules.dropAll(DELETION_CAUSE);
      for (const run of stores.runs.unsettled())
        if (!run.cancelRequested) this.#runs.requestCancel(run, DELETION_CAUSE);
      // nothing goes to the children (they are deleted too); a parent deleted too gets nothing,
      // a parent that lives on only how the approvals it was told of ended (it forgets the
      // child's runs itself, `childDeleted`)
      for (const childId of this.#children()) stores.outbox.withdrawAllTo(childId);
      if (header.parentSession !== null)
        stores.outbox.withdrawAllTo(header.parentSession, cause === "parent" ? [] : ["approval"]);
      return closed;
    });
    if (ended) turns.abortInFlight(DELETION_CAUSE);
  }

  /** Before the rows go: the parent forgets a child deleted on its own; the directory forgets a top-level session. */
  async #leave(state: DeletionState): Promise<void> {
    const header = this.#ctx.header()!;
    if (header.parentSession !== null) {
      if (state.cause !== "parent") await this.#ctx.session(header.parentSession).childDeleted(header.id);
      return;
    }
    await this.#ctx.registry().removeSession(header.id);
  }

  /** This session's local children (one-shot and continuable), whatever their state. */
  #children(): string[] {
    return this.#ctx.stores.children.all().map((c) => c.childId);
  }

  #state(): DeletionState | undefined {
    const value = this.#ctx.stores.flags.get("deleting");
    return value === undefined ? undefined : (JSON.parse(value) as DeletionState);
  }
}
