import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import type { SessionHost } from "./host";
import { text, type Tool } from "./tools";

/** The longest delay `schedule_message` takes (a year, as `notBefore`). */
const MAX_DELAY_SECONDS = 366 * 24 * 3600;

/** One object (a model's tool parameters are an object): exactly one of `delay_seconds` and `cron`. */
const ScheduleArgs = lazySchema(() =>
  z.strictObject({
    message: z.string().min(1).max(65_536),
    delay_seconds: z.number().int().min(1).max(MAX_DELAY_SECONDS).optional(),
    cron: z.string().min(1).max(200).optional(),
    timezone: z.string().min(1).max(64).optional(),
  }),
);
type ScheduleArgs = z.infer<typeof ScheduleArgs>;

/**
 * `schedule_message` (README "Schedules"): the model schedules a message to its own session,
 * once after a delay or at every time of a five-field cron expression (in `timezone`, default
 * UTC). A call run again after a restart schedules nothing twice. Subject to tool filters and
 * approvals like any tool.
 */
export const scheduleMessageTool: Tool<ScheduleArgs, SessionHost> = {
  name: "schedule_message",
  description:
    "Send yourself a message later (it starts a turn): once after delay_seconds, or at every time of a " +
    '5-field cron ("minute hour day month weekday") in timezone (IANA, default UTC).',
  schema: ScheduleArgs,
  async run(args, ctx, host) {
    const { message, delay_seconds: delaySeconds, cron, timezone } = args;
    if ((delaySeconds === undefined) === (cron === undefined))
      return text("Error: give exactly one of delay_seconds and cron", true);
    if (delaySeconds !== undefined && timezone !== undefined)
      return text("Error: timezone goes with cron, not with delay_seconds", true);
    const scheduled = await host.scheduleMessage(
      cron === undefined
        ? { message, delaySeconds: delaySeconds! }
        : { message, cron, ...(timezone === undefined ? {} : { timezone }) },
      ctx.callKey,
    );
    if (!scheduled.ok) return text(`Error: ${scheduled.message}`, true);
    const at = new Date(scheduled.value.next).toISOString();
    return text(
      cron === undefined
        ? `scheduled message ${scheduled.value.id} for ${at}`
        : `scheduled ${scheduled.value.id}: "${cron}" (${timezone ?? "UTC"}), first at ${at}`,
    );
  },
};
