import type { Remote, SessionRpc } from "../../src/contract/session-api";
import type { SessionPart } from "../kernel/part";
import type { SessionStores } from "../store/session-stores";

/** The first look at working children comes this long after the parent last looked (or woke). */
export const CHILD_WATCH_MS = 60_000;
/** Looks that found every child's wake-up in place back off, doubling up to this. */
export const CHILD_WATCH_MAX_MS = 15 * 60_000;

/**
 * The parent's watchdog over the children that work for it: local one-shot runs without a
 * result, continuable epochs whose settled notice has not arrived. A child whose alarm was lost
 * (the platform never fired it) would otherwise wait until something touched it; while such
 * children exist, the parent's own alarm comes round every `CHILD_WATCH_MS` (backing off to
 * `CHILD_WATCH_MAX_MS` while every child is in order) and asks each to re-arm owed work (`wake`).
 * A child that repaired something resets the interval. A root has no parent: a request to it does the same check
 * (`DriveLoop.touched`), and every object does it when it boots.
 *
 * The schedule lives in memory: after a restart the first look is `CHILD_WATCH_MS` away again,
 * which is all a watchdog needs. Out-of-process runs poll their far side on their own clock.
 */
export class ChildWatch implements SessionPart {
  readonly name = "child watch";
  readonly #stores: SessionStores;
  readonly #session: (id: string) => Remote<SessionRpc>;
  readonly #alarm: { wakeBy(at: number): Promise<void> };
  #interval = CHILD_WATCH_MS;
  #due: number | undefined;

  /** `alarm.wakeBy(at)` arms the object's alarm for `at` unless it is armed earlier (alarm-clock.ts). */
  constructor(
    stores: SessionStores,
    session: (id: string) => Remote<SessionRpc>,
    alarm: { wakeBy(at: number): Promise<void> },
  ) {
    this.#stores = stores;
    this.#session = session;
    this.#alarm = alarm;
  }

  /**
   * A child began working for this session (its start was published, outside any pass of the
   * drive loop): the watchdog's first look is armed now rather than at the next pass.
   */
  started(): void {
    this.#due ??= Date.now() + this.#interval;
    const due = this.#due;
    // after the current (possibly transactional) call stack: alarms are not part of a transaction
    Promise.resolve()
      .then(() => this.#alarm.wakeBy(due))
      .catch((error: unknown) => {
        console.error("arming the child watch failed", error instanceof Error ? error.message : error);
      });
  }

  nextDue(): number | undefined {
    if (this.#watched().length === 0) {
      this.#due = undefined;
      this.#interval = CHILD_WATCH_MS;
      return undefined;
    }
    this.#due ??= Date.now() + this.#interval;
    return this.#due;
  }

  /** When a look is due: asks every working child to repair its wake-up. Never asks for another pass. */
  async repair(): Promise<boolean> {
    if (this.#due === undefined || Date.now() < this.#due) return false;
    const watched = this.#watched();
    const answers = await Promise.all(
      watched.map((id) =>
        this.#session(id)
          .wake()
          .catch(() => false),
      ),
    );
    this.#interval = answers.some(Boolean)
      ? CHILD_WATCH_MS
      : Math.min(this.#interval * 2, CHILD_WATCH_MAX_MS);
    this.#due = Date.now() + this.#interval;
    return false;
  }

  #watched(): string[] {
    const { runs, epochs } = this.#stores;
    return [...new Set([...runs.runningLocalChildren(), ...epochs.publishedChildren()])];
  }
}
