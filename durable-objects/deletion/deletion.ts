import { faultPoint } from "../../src/core/faults";
import type { SessionPart, StopCause, Stoppable } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

/** Why a session is being deleted: a caller's DELETE, its parent's deletion, or retention. */
export type DeletionCause = StopCause;

/** The `deleting` flag's value: how and since when. */
interface DeletionState {
  cause: DeletionCause;
  since: number;
}

/** The cause in the `turn/end` of a turn a deletion stopped. */
export const DELETION_CAUSE = "the session is being deleted";

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
 * everywhere from then on and, in the same transaction, asks every part to stop (`onStop`, in
 * STOP_ORDER: the turn and queued messages, schedules, runs, what the outbox owed); then, in the drive loop, resumable after any crash because
 * the mark is durable: wait until every local child has erased itself, tell the parent (a descendant deleted on its
 * own) or the directory (a top-level session) that it is gone, and erase the object: its rows and
 * its alarm.
 */
export class Deletion implements SessionPart {
  readonly name = "deletion";
  readonly #ctx: SessionContext;
  readonly #stopping: readonly Stoppable[];
  readonly #eraser: Eraser;
  /** Children this instance saw gone (an erased object stays erased). */
  readonly #gone = new Set<string>();
  #nextPoll = 0;

  /** `stopping`: the parts that stop with the session, in the order they are asked (STOP_ORDER). */
  constructor(ctx: SessionContext, stopping: readonly Stoppable[], eraser: Eraser) {
    this.#ctx = ctx;
    this.#stopping = stopping;
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
    const owed = this.#stopping.some((part) => part.owesBeforeErase?.());
    if (waiting.some((childId) => !this.#gone.has(childId)) || (owed && now < state.since + OWED_GRACE_MS)) {
      this.#nextPoll = now + CHILD_POLL_MS;
      return false;
    }
    await this.#leave(state);
    await faultPoint(id, "mid-delete");
    await this.#eraser.erase();
    return false;
  }

  /** Marks the session deleted and asks every part to stop, in one transaction; then what each must run after it. */
  #stop(cause: DeletionCause): void {
    const { stores } = this.#ctx;
    const after = stores.transact(() => {
      const state: DeletionState = { cause, since: Date.now() };
      stores.flags.set("deleting", JSON.stringify(state));
      return this.#stopping.map((part) => part.onStop?.(cause, DELETION_CAUSE));
    });
    for (const run of after) run?.();
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
