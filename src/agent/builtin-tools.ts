import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import type { SessionHeader } from "../contract/session";
import type { SessionHost } from "./host";
import type { OfferedTool, ToolSource } from "./tool-source";
import { scheduleMessageTool } from "./schedule-tool";
import { anyTool, text } from "./tools";

/** `echo`: returns its text unchanged. Deterministic, handy for scripted tests and demos. */
const echo = {
  name: "echo",
  description: "Returns the given text unchanged.",
  schema: lazySchema(() => z.strictObject({ text: z.string().max(65_536) })),
  run: (args: { text: string }) => text(args.text),
};

/**
 * The runtime's own general tools: `echo`, offered to every session, and `schedule_message`,
 * offered to a top-level session (under its tool filter) and to a child only when its tool
 * filter's `allow` list names it. A child's schedules outlive no one's intent that way: work that
 * recurs below a session is asked for by name, never inherited by a filter that allows everything.
 */
export function builtinTools(): ToolSource<SessionHost> {
  const always: OfferedTool<SessionHost>[] = [{ tool: anyTool(echo) }];
  const withSchedules: OfferedTool<SessionHost>[] = [...always, { tool: anyTool(scheduleMessageTool) }];
  const names = new Set(withSchedules.map((offered) => offered.tool.name));
  return {
    name: "built-in",
    knows: (tool) => names.has(tool),
    offer: (header) => (offersSchedules(header) ? withSchedules : always),
  };
}

/** Whether `schedule_message` is offered to the session with this header. */
export function offersSchedules(header: SessionHeader): boolean {
  return (
    header.parentSession === null ||
    header.options.toolFilter?.allow?.includes(scheduleMessageTool.name) === true
  );
}
