/**
 * One in-memory timer for the earliest time a part must act while this instance runs, even in
 * the middle of a long step (a deadline ends the model call in flight). The alarm stays the
 * durable clock: a timer dies with its instance, and the next instance's drive loop finds what
 * is due and sets its own.
 */
export class DueTimer {
  #at: number | undefined;
  #handle: ReturnType<typeof setTimeout> | undefined;

  /** Fires `fire` at `at` (once), replacing the timer set for another time; undefined clears it. */
  set(at: number | undefined, fire: () => void): void {
    if (at === this.#at) return;
    if (this.#handle !== undefined) clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#at = at;
    if (at === undefined) return;
    this.#handle = setTimeout(
      () => {
        this.#at = undefined;
        this.#handle = undefined;
        fire();
      },
      Math.max(0, at - Date.now()),
    );
  }
}
