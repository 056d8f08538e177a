import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import type { SessionHost } from "./host";
import { staticToolSource, type ToolSource } from "./tool-source";
import { scheduleMessageTool } from "./schedule-tool";
import { anyTool, text } from "./tools";

/** `echo`: returns its text unchanged. Deterministic, handy for scripted tests and demos. */
const echo = {
  name: "echo",
  description: "Returns the given text unchanged.",
  schema: lazySchema(() => z.strictObject({ text: z.string().max(65_536) })),
  run: (args: { text: string }) => text(args.text),
};

/** The runtime's own general tools, offered to every session: `echo` and `schedule_message`. */
export function builtinTools(): ToolSource<SessionHost> {
  return staticToolSource<SessionHost>("built-in", [anyTool(echo), anyTool(scheduleMessageTool)]);
}
