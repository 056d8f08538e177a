import * as z from "zod";
import { lazySchema } from "./lazy";
import { WireContent } from "./content-schema";
import type { WireContent as Content } from "./content";

/**
 * Control over time (README "Steering, deadlines and schedules"): how a message joins a session's
 * work, how long a child may work, and messages delivered later or on a schedule.
 */

/**
 * How a message joins the session's work: `next-turn` (the default: queued as a later turn),
 * `next-step` (steers the running turn: the model reads it before its next step, inside that
 * turn; an idle session starts a turn with it), `interrupt` (the running turn ends `aborted` and
 * this message is the next turn, ahead of what was queued).
 */
export const MessageDelivery = lazySchema(() => z.enum(["next-turn", "next-step", "interrupt"]));
export type MessageDelivery = z.infer<typeof MessageDelivery>;

/** At most this many steering (`next-step`) messages of callers wait for a running turn's next step. */
export const MAX_PENDING_STEERS = 16;

/** The longest a message may wait for its `notBefore` time (a year). */
export const MAX_NOT_BEFORE_MS = 366 * 24 * 3600 * 1000;

/** The longest deadline a start may name (`deadlineSeconds`): a week. */
export const MAX_DEADLINE_SECONDS = 7 * 24 * 3600;

/**
 * At most this many schedules (`POST …/schedules` and the model's `schedule_message`) and
 * messages waiting for their `notBefore` time, together, per session.
 */
export const MAX_SCHEDULED_PER_SESSION = 64;

/** `notBefore`: epoch milliseconds, at most a year ahead (a time past is delivered at once). */
export const NotBefore = lazySchema(() =>
  z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .refine((at) => at <= Date.now() + MAX_NOT_BEFORE_MS, "must be at most a year ahead"),
);

/** `deadlineSeconds` on one-shot and continuable starts. */
export const DeadlineSeconds = lazySchema(() => z.number().int().min(1).max(MAX_DEADLINE_SECONDS));

/** When a one-shot run accepted at `acceptedAt` reaches its deadline (none: it has none). */
export function deadlineOf(
  request: { deadlineSeconds?: number | undefined },
  acceptedAt: number,
): number | undefined {
  return request.deadlineSeconds === undefined ? undefined : acceptedAt + request.deadlineSeconds * 1000;
}

/** Why a run or a turn ended at its deadline: its diagnostic, its `turn/end` cause. */
export function deadlineDiagnostic(seconds: number, what: "run" | "turn"): string {
  return what === "run"
    ? `deadline passed: the run was still working ${seconds} s after it was accepted (deadlineSeconds)`
    : `deadline passed: the turn was still running ${seconds} s after it started (deadlineSeconds)`;
}

/** Whether a diagnostic or a cause is a deadline's. */
export function isDeadline(text: string | undefined): boolean {
  return text?.startsWith("deadline passed:") === true;
}

/** `POST /v1/sessions/:id/schedules`. The cron and the time zone are checked by the session (schedule.ts). */
export const CreateScheduleBody = lazySchema(() =>
  z.strictObject({
    cron: z.string().min(1).max(200),
    content: WireContent,
    timezone: z.string().min(1).max(64).optional(),
  }),
);
export type CreateSchedule = z.infer<typeof CreateScheduleBody>;

/**
 * One entry of `GET /v1/sessions/:id/schedules`: a recurring schedule (`cron`), or a message held
 * for its time (`message`: sent with `notBefore`, or the model's `schedule_message` with a delay),
 * delivered once at `next` as `messageId` unless it is deleted first.
 */
export type Schedule = CronSchedule | HeldMessage;

export interface CronSchedule {
  scheduleId: string;
  kind: "cron";
  cron: string;
  timezone: string;
  /** Epoch ms of the next firing. */
  next: number;
  content: Content;
}

export interface HeldMessage {
  scheduleId: string;
  kind: "message";
  /** Epoch ms it is delivered at. */
  next: number;
  content: Content;
  /** The id its sender was given at acceptance (the message's id once delivered). */
  messageId: string;
  delivery: MessageDelivery;
}
