/**
 * Messages for the scripted model (docs/api.md, "The scripted model"): a message whose text is
 * `{"script": [steps]}` plays the steps, one per model call: `{"say": text}`, `{"think": ms}`,
 * `{"call": [{tool, args}]}`, `{"stop": "max-tokens" | "refusal"}`, `{"fail": message}`; past the
 * end it answers "done". Any other text is echoed back ("echo: <text>").
 */

/** The JSON text of `{"script": steps}`. */
export function script(...steps: unknown[]): string {
  return JSON.stringify({ script: steps });
}

/** One tool call of a `{"call": [...]}` step. */
export function toolCall(tool: string, args: Record<string, unknown> = {}): unknown {
  return { tool, args };
}

/** A background `subagent` tool call (a continuable child in a session of the default mode). */
export function spawnCall(description: string, prompt: string): unknown {
  return { tool: "subagent", args: { description, prompt, run_in_background: true } };
}

/** A turn that thinks for 10 s before it answers: still running whenever a test looks. */
export const LONG_TURN = script({ think: 10_000 }, { say: "never" });
