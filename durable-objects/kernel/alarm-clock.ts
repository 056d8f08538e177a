import type { HostStorage } from "../host/port";

/**
 * The one alarm of a session object, as this instance last set, cleared or read it. Only the
 * drive loop and the child watchdog move it, through here, so the copy spares the storage a write
 * that changes nothing and a read per start; once the alarm fires (`fired`) it is not known again,
 * and the lost-alarm repair always reads the real one (`read`).
 */
export class AlarmClock {
  readonly #storage: HostStorage;
  /** undefined: not known. */
  #alarm: number | null | undefined;

  constructor(storage: HostStorage) {
    this.#storage = storage;
  }

  /** What this instance knows of the alarm without a read (undefined: not known). */
  known(): number | null | undefined {
    return this.#alarm;
  }

  /** The alarm as stored. */
  async read(): Promise<number | null> {
    this.#alarm = await this.#storage.getAlarm();
    return this.#alarm;
  }

  /** Sets the alarm (a write only when it moves). */
  async arm(at: number): Promise<void> {
    if (this.#alarm === at) return;
    this.#alarm = at;
    await this.#storage.setAlarm(at);
  }

  /**
   * Arms the alarm for `at` unless it is armed earlier already. No alarm known is read again: the
   * alarm's own retry clock may have set one behind this copy (session-object.ts re-arms itself).
   */
  async wakeBy(at: number): Promise<void> {
    const alarm = this.#alarm ?? (await this.read());
    if (alarm === null || alarm > at) await this.arm(at);
  }

  /** Clears the alarm (a write only when one may be set). */
  async clear(): Promise<void> {
    if (this.#alarm === null) return;
    this.#alarm = null;
    await this.#storage.deleteAlarm();
  }

  /** The platform is running the alarm (it is consumed, or comes back if the handler fails). */
  fired(): void {
    this.#alarm = undefined;
  }
}
