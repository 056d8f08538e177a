import { describe, expect, it } from "vitest";
import { AlarmClock } from "../../../durable-objects/kernel/alarm-clock";
import { DriveLoop } from "../../../durable-objects/kernel/drive-loop";
import type { SessionPart } from "../../../durable-objects/kernel/part";
import { SessionSignals } from "../../../durable-objects/kernel/signals";

/** The alarm calls of a Durable Object's storage, recorded (the drive loop uses nothing else). */
function alarmStorage(initial: number | null = null) {
  const calls: string[] = [];
  let alarm = initial;
  const storage = {
    async getAlarm() {
      calls.push("get");
      return alarm;
    },
    async setAlarm(at: number) {
      calls.push(`set +${Math.round((at - Date.now()) / 1000)}s`);
      alarm = at;
    },
    async deleteAlarm() {
      calls.push("delete");
      alarm = null;
    },
  };
  return { storage: storage as unknown as DurableObjectStorage, calls, alarm: () => alarm };
}

/** A drive loop over `parts`, and the alarm clock it shares with the parts (a watchdog's `wakeBy`). */
function driveLoop(
  storage: DurableObjectStorage,
  parts: SessionPart[],
): { loop: DriveLoop; alarm: AlarmClock } {
  const alarm = new AlarmClock(storage);
  return { loop: new DriveLoop(alarm, parts, new SessionSignals(), { get: () => undefined }), alarm };
}

/** A part owing `work` steps now, then `later` (a time, or nothing). */
function part(work: number, later?: number): SessionPart & { done: number } {
  const p = {
    name: "test part",
    done: 0,
    async step() {
      if (p.done >= work) return false;
      p.done++;
      return true;
    },
    nextDue: () => (p.done < work ? Date.now() : later),
  };
  return p;
}

describe("the drive loop's alarm", () => {
  it("arms the safety net before work owed now, and clears the alarm when nothing is owed after it", async () => {
    const { storage, calls, alarm } = alarmStorage();
    const owed = part(2);
    const { loop } = driveLoop(storage, [owed]);
    await loop.kick();
    expect(owed.done).toBe(2);
    expect(calls).toEqual(["set +5s", "delete"]); // the net is SAFETY_NET_MS away
    expect(alarm()).toBeNull();
  });

  it("writes nothing for a pass with nothing owed now whose alarm is already where it belongs", async () => {
    const watchdogAt = Date.now() + 60_000;
    const { storage, calls } = alarmStorage();
    const { loop, alarm: clock } = driveLoop(storage, [part(0, watchdogAt)]);
    await clock.wakeBy(watchdogAt); // a start armed the watchdog
    await loop.kick(); // a delivery's pass: nothing owed now
    await loop.kick();
    expect(calls).toEqual(["get", "set +60s"]);
  });

  it("reads the alarm once for many starts, and again after the alarm fired", async () => {
    const at = Date.now() + 60_000;
    const { storage, calls } = alarmStorage(Date.now() + 30_000);
    const { loop, alarm: clock } = driveLoop(storage, [part(0)]);
    for (let i = 0; i < 5; i++) await clock.wakeBy(at);
    expect(calls).toEqual(["get"]); // armed earlier already: no write
    loop.alarmFired();
    await clock.wakeBy(at);
    expect(calls).toEqual(["get", "get"]);
  });

  it("repairs from the real alarm, whatever this instance last wrote", async () => {
    const { storage, calls } = alarmStorage();
    const { loop, alarm: clock } = driveLoop(storage, [part(0, Date.now() + 10_000)]);
    await clock.wakeBy(Date.now() + 10_000);
    await storage.deleteAlarm(); // lost behind the loop's back
    calls.length = 0;
    expect(await loop.armIfOwed()).toBe(true);
    expect(calls).toEqual(["get", "set +10s"]);
  });

  it("arms the safety net for owed work when the alarm it knows of is long past its time (lost)", async () => {
    const { storage, calls } = alarmStorage(Date.now() - 2 * 60_000);
    const owed = part(1);
    const { loop, alarm: clock } = driveLoop(storage, [owed]);
    await clock.wakeBy(Date.now() + 60_000); // reads the lost alarm: it is earlier, so it stays
    await loop.kick();
    expect(owed.done).toBe(1);
    expect(calls).toEqual(["get", "set +5s", "delete"]);
  });

  it("reads the alarm again when it knows of none: the alarm's own retry may have set one behind it", async () => {
    const { storage, calls, alarm } = alarmStorage();
    const { loop, alarm: clock } = driveLoop(storage, [part(1)]);
    await loop.kick(); // its pass cleared the alarm: this instance knows of none
    const rearmed = Date.now() + 30_000;
    await storage.setAlarm(rearmed); // a failing alarm re-armed itself, not through the clock
    calls.length = 0;
    await clock.wakeBy(Date.now() + 60_000); // a child's watchdog: later than the re-armed alarm
    expect(calls).toEqual(["get"]);
    expect(alarm()).toBe(rearmed);
  });
});
