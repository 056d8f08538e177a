import type { Cron } from "croner";
import { fail, ok, type Outcome } from "../contract/errors";
import { quote } from "./quote";

/**
 * Recurring times from a five-field cron expression in an IANA time zone, through croner (a
 * well-kept cron library with time zone and daylight-saving handling; nothing here parses cron).
 * Pure apart from the library.
 */
export interface CronTimes {
  /** The first firing time strictly after `after` (epoch ms); undefined when it never fires again. */
  after(after: number): number | undefined;
}

/** croner, loaded by `loadCron`, not when an isolate starts. */
let croner: typeof Cron | undefined;

/** Whether croner is loaded (`cronTimes` may run). */
export function cronLoaded(): boolean {
  return croner !== undefined;
}

/** Loads croner once: every path that reads a cron (`cronTimes`) awaits it first. */
export async function loadCron(): Promise<void> {
  croner ??= (await import("croner")).Cron;
}

/**
 * `cron` ("minute hour day-of-month month day-of-week", exactly five fields; croner's extensions
 * such as `L`, `W` and `#` included) in `timezone` (an IANA name): its firing times, or why not.
 * A cron that never fires (the 30th of February) is refused too.
 */
export function cronTimes(cron: string, timezone: string, now: number): Outcome<CronTimes> {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 || cron.includes("@"))
    return fail(
      "INVALID_REQUEST",
      `cron: ${quote(cron)} is not a five-field cron expression (minute hour day month weekday)`,
    );
  if (!knownTimeZone(timezone))
    return fail("INVALID_REQUEST", `timezone: ${quote(timezone)} is not an IANA time zone name`);
  let job: Cron;
  if (croner === undefined) throw new Error("cronTimes: croner is not loaded (await loadCron())");
  try {
    job = new croner(cron, { timezone, mode: "5-part" });
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : "malformed";
    return fail("INVALID_REQUEST", `cron: ${quote(cron)} is not valid (${reason})`);
  }
  const times: CronTimes = {
    after: (after) => job.nextRun(new Date(after))?.getTime() ?? undefined,
  };
  if (times.after(now) === undefined) return fail("INVALID_REQUEST", `cron: ${quote(cron)} never fires`);
  return ok(times);
}

function knownTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}
