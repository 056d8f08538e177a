import type { CreateSchedule } from "../../src/contract/control";
import { fail, ok } from "../../src/contract/errors";
import { loadCron } from "../../src/core/cron";
import { callerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

/** A session's schedules: listed, read one by one, created, deleted (README "Schedules"). */
export const scheduleMethods = {
  schedules: callerMethod({ need: "read", run: (parts: Parts) => ok({ schedules: parts.schedules.list() }) }),
  /** One schedule or held message, as the listing shows it; a deleted or fired-once one is gone (404). */
  schedule: callerMethod({
    need: "read",
    run: (parts: Parts, _call, scheduleId: string) => {
      const schedule = parts.schedules.list().find((s) => s.scheduleId === scheduleId);
      return schedule ? ok(schedule) : fail("NOT_FOUND", "schedule not found");
    },
  }),
  createSchedule: callerMethod({
    need: "act",
    prepare: loadCron,
    run: (parts: Parts, _call, body: CreateSchedule) => parts.schedules.create(body, "caller"),
  }),
  /** The session itself (its token, an admin) or whoever may delete it (a token of its tree above it). */
  deleteSchedule: callerMethod({
    need: ["act", "delete"],
    run: (parts: Parts, { caller, header }, scheduleId: string) => {
      const by =
        caller.kind === "admin"
          ? "admin"
          : caller.sessionId === header.id
            ? "the session's token"
            : `the token of ${caller.sessionId}`;
      return parts.schedules.remove(scheduleId, `deleted by ${by}`);
    },
  }),
};
