import type { SessionHeader } from "../../src/contract/session";
import { faultPoint } from "../../src/core/faults";
import type { AlarmClock } from "./alarm-clock";
import type { SessionPart } from "./part";
import type { SessionSignals } from "./signals";

/** If the in-process driver dies with its instance, the alarm picks the work up after this long. */
const SAFETY_NET_MS = 5_000;

/**
 * An armed alarm this long past its time was lost: the platform never fired it. (A pass that runs
 * past its safety net is joined by that alarm within seconds, so a live alarm is never this late.)
 */
export const LOST_ALARM_MS = 60_000;

/** How often a request touching the object may check that owed work still has a wake-up. */
const TOUCH_CHECK_MS = 10_000;

/**
 * The drive loop of one session object: runs its parts' work until none is owed, then arms the
 * one alarm for the earliest due item (or clears it). Accepted work starts in-process at once
 * (`kickSoon`), with the alarm armed first as the safety net; the alarm (`kick`) is the retry
 * clock. At most one pass runs at a time; a kick during a pass makes it go round once more.
 */
export class DriveLoop {
  readonly #alarm: AlarmClock;
  readonly #parts: readonly SessionPart[];
  readonly #header: { get(): SessionHeader | undefined };
  #running: Promise<void> | null = null;
  #wake = false;
  /** Set once the session's object was erased: nothing runs again in this instance. */
  #halted = false;
  #touchCheckedAt = Number.NEGATIVE_INFINITY;

  /**
   * `parts` in the order their hooks run; the loop runs whenever `signals` says work is due.
   * `header` names the session for its fault points (its id once it has one).
   */
  constructor(
    alarm: AlarmClock,
    parts: readonly SessionPart[],
    signals: SessionSignals,
    header: { get(): SessionHeader | undefined },
  ) {
    this.#alarm = alarm;
    this.#parts = parts;
    this.#header = header;
    signals.whenWorkDue(() => this.kickSoon());
  }

  /** Starts the loop without waiting. A failure is not lost work: the safety-net alarm retries. */
  kickSoon(): void {
    this.kick().catch((error: unknown) => {
      console.error(
        "driver step failed; the alarm will retry",
        error instanceof Error ? error.message : error,
      );
    });
  }

  /** Starts (or re-checks) the loop; resolves when it has nothing left to do. */
  kick(): Promise<void> {
    if (this.#halted) return Promise.resolve();
    this.#wake = true;
    if (!this.#running) {
      this.#running = this.#drive().finally(() => {
        this.#running = null;
      });
    }
    return this.#running;
  }

  /** When the one alarm must fire next: the earliest time any part is due (the first part due now ends the search). */
  nextDue(): number | undefined {
    const now = Date.now();
    let due: number | undefined;
    for (const part of this.#parts) {
      const at = part.nextDue?.();
      if (at === undefined) continue;
      if (at <= now) return at;
      if (due === undefined || at < due) due = at;
    }
    return due;
  }

  /**
   * The repair of a lost wake-up, at boot, when a request touches the object and when its parent's
   * watchdog asks: owed work whose alarm is missing, long overdue (lost) or later than the work
   * is due (a boot finds work the last instance kept in memory) gets one for when it is due.
   * Resolves true when it had to.
   */
  async armIfOwed(): Promise<boolean> {
    if (this.#halted) return false;
    const due = this.nextDue();
    if (due === undefined) return false;
    const alarm = await this.#alarm.read();
    if (alarm !== null && alarm > Date.now() - LOST_ALARM_MS && alarm <= due) return false;
    await this.#alarm.arm(Math.max(due, Date.now() + 1));
    return true;
  }

  /** The session's object was erased: the pass in progress stops after the current hook, and none follows. */
  halt(): void {
    this.#halted = true;
  }

  /** The platform is running the alarm (it is consumed, or comes back if the handler fails). */
  alarmFired(): void {
    this.#alarm.fired();
  }

  /** A request touched the object: at most every TOUCH_CHECK_MS, `armIfOwed` runs beside it (no await). */
  touched(): void {
    const now = Date.now();
    if (now - this.#touchCheckedAt < TOUCH_CHECK_MS) return;
    this.#touchCheckedAt = now;
    this.armIfOwed().catch((error: unknown) => {
      console.error("wake-up check failed", error instanceof Error ? error.message : error);
    });
  }

  async #drive(): Promise<void> {
    const parts = this.#parts;
    // the safety net, for work owed now unless a live alarm is due sooner anyway (one long past
    // its time was lost); a pass with nothing owed now only re-arms at its end (a part that starts
    // work reports it owed: `nextDue`; the clock is read after it, so work it reports owed "now"
    // is never later than this pass's now)
    const due = this.nextDue();
    const now = Date.now();
    const alarm = this.#alarm.known();
    const covered = typeof alarm === "number" && alarm <= now + SAFETY_NET_MS && alarm > now - LOST_ALARM_MS;
    if (due !== undefined && due <= now && !covered) await this.#alarm.arm(now + SAFETY_NET_MS);
    await faultPoint(this.#header.get()?.id ?? "", "before-drive");
    for (;;) {
      this.#wake = false;
      for (const part of parts) part.pump?.();
      let worked = false;
      for (const part of parts) {
        if (part.step && (await part.step())) worked = true;
        if (this.#halted) return;
      }
      if (worked) continue;
      if (await this.#first(parts, (part) => part.repair?.())) continue;
      if (await this.#first(parts, (part) => part.idle?.())) continue;
      await this.#schedule();
      if (!this.#wake) return;
    }
  }

  /** Runs `hook` of the parts in order until one did something. */
  async #first(
    parts: readonly SessionPart[],
    hook: (part: SessionPart) => Promise<boolean> | boolean | undefined,
  ): Promise<boolean> {
    for (const part of parts) if (await hook(part)) return true;
    return false;
  }

  /** Re-arms the alarm to the earliest owed item, or clears it. Called last. */
  async #schedule(): Promise<void> {
    const due = this.nextDue();
    if (due !== undefined) await this.#alarm.arm(Math.max(due, Date.now() + 1));
    else await this.#alarm.clear();
  }
}
