import { z } from "zod";
import type { SessionHost } from "./host";
import { text, ToolRegistry } from "./tools";

/** `echo`: returns its text unchanged. Deterministic, handy for scripted tests and demos. */
const echo = {
  name: "echo",
  description: "Returns the given text unchanged.",
  schema: z.strictObject({ text: z.string().max(65_536) }),
  run: (args: { text: string }) => text(args.text),
};

export function builtinTools(): ToolRegistry<SessionHost> {
  return new ToolRegistry<SessionHost>().register(echo);
}
