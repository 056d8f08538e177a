import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { textOf } from "../contract/content";
import {
  abortableDelay,
  type ConversationMessage,
  type ModelClient,
  ModelError,
  type ModelReply,
  type ModelRequest,
} from "./model";

/**
 * The deterministic `scripted` model (docs/api.md). On each call it reads the newest user message of
 * the current turn. A JSON text with a `script` array is played one answering step per call, the
 * step index being the number of assistant messages already in the turn; `think` entries wait
 * (abortably) and then play the next step in the same call. Any other text is echoed. A compaction
 * request is answered with `scriptedSummary` of its text.
 */

const ScriptStep = lazySchema(() =>
  z.union([
    z.strictObject({ say: z.string() }),
    z.strictObject({
      call: z.array(z.strictObject({ tool: z.string(), args: z.unknown().optional() })).min(1),
    }),
    z.strictObject({ think: z.number().finite().nonnegative().max(600_000) }),
    z.strictObject({ fail: z.string() }),
    z.strictObject({ stop: z.enum(["max-tokens", "refusal"]) }),
  ]),
);
type ScriptStep = z.infer<typeof ScriptStep>;

const Script = lazySchema(() => z.object({ script: z.array(ScriptStep) }));

export function parseScript(text: string): ScriptStep[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined; // not JSON: the text is echoed
  }
  const parsed = Script.safeParse(json);
  return parsed.success ? parsed.data.script : undefined;
}

function newestUserText(turn: readonly ConversationMessage[]): string {
  for (let i = turn.length - 1; i >= 0; i--) {
    const m = turn[i];
    if (m?.role === "user") return textOf(m.content);
  }
  return "";
}

export class ScriptedModel implements ModelClient {
  /** No call timeout: a `think` step waits as long as it says (an interrupt still aborts it). */
  readonly timeoutMs = Number.POSITIVE_INFINITY;

  async generate(request: ModelRequest): Promise<ModelReply> {
    const text = newestUserText(request.turn);
    if (request.purpose === "compaction") return say(scriptedSummary(text));
    const script = parseScript(text);
    if (script === undefined) return say(`echo: ${text}`);

    const stepIndex = request.turn.filter((m) => m.role === "assistant").length;
    let answering = 0;
    for (const [position, step] of script.entries()) {
      if ("think" in step) {
        if (answering === stepIndex) await abortableDelay(step.think, request.signal);
        continue;
      }
      if (answering++ < stepIndex) continue;
      return play(step, stepIndex, position);
    }
    return say("done");
  }
}

/**
 * The `scripted` model's summary of a compaction request's text: its length, its first and its
 * last 80 characters (deterministic and bounded, whatever the conversation).
 */
export function scriptedSummary(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return `scripted summary of ${flat.length} characters: "${flat.slice(0, 80)}" … "${flat.slice(-80)}"`;
}

function say(text: string): ModelReply {
  return { content: [{ type: "text", text }], toolCalls: [], stopReason: "end" };
}

function play(step: Exclude<ScriptStep, { think: number }>, stepIndex: number, position: number): ModelReply {
  if ("say" in step) return say(step.say);
  if ("fail" in step) throw new ModelError(step.fail);
  if ("stop" in step) return { content: [], toolCalls: [], stopReason: step.stop };
  return {
    content: [],
    toolCalls: step.call.map((c, i) => ({
      id: `call_${stepIndex}_${position}_${i}`,
      name: c.tool,
      args: c.args ?? {},
    })),
    stopReason: "tool-use",
  };
}
