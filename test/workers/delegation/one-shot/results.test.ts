import { describe, expect, it } from "vitest";
import { createSession, sendMessage, startOneShot, waitForRun } from "../../../support/api";
import { assistantTexts, ofType, waitForTurnEnds } from "../../../support/logs";
import { script } from "../../../support/scripts";

/**
 * What a one-shot run's result holds (semantics.md §3.2) and how it reads to the model that
 * started it in the foreground (§3.3): every stop reason is a result; the output is the child's
 * last non-empty assistant content, never a tool's text.
 */

describe("run results (semantics.md §3.2, §3.3)", () => {
  it("a child hitting its token ceiling ends max-tokens, a failing model ends error with output [] and a diagnostic, a declining model ends refusal; the foreground tool renders each as an error", async () => {
    const parent = await createSession();
    const cases = [
      { prompt: script({ stop: "max-tokens" }), expected: { output: [], stopReason: "max-tokens" } },
      {
        prompt: script({ fail: "upstream is down" }),
        expected: { output: [], stopReason: "error", diagnostic: "upstream is down" },
      },
      { prompt: script({ stop: "refusal" }), expected: { output: [], stopReason: "refusal" } },
    ];
    for (const c of cases) {
      const run = await startOneShot(parent.id, { provider: "spawn", prompt: c.prompt });
      expect((await waitForRun(parent.id, run.runId)).result).toEqual(c.expected);
    }
    // a partial answer survives a token ceiling
    const partial = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "be long",
      model: "openai:fake-model",
    });
    expect((await waitForRun(parent.id, partial.runId)).result).toEqual({
      output: [{ type: "text", text: "this answer is cut" }],
      stopReason: "max-tokens",
      usage: { inputTokens: 1, outputTokens: 4 },
    });

    const caller = await createSession();
    const call = (prompt: string, description: string) => ({
      tool: "subagent",
      args: { description, prompt, run_in_background: false },
    });
    await sendMessage(
      caller.id,
      script(
        {
          call: [
            call(script({ stop: "max-tokens" }), "ceiling"),
            call(script({ fail: "upstream is down" }), "broken"),
            call(script({ stop: "refusal" }), "declines"),
          ],
        },
        { say: "reported" },
      ),
    );
    const log = await waitForTurnEnds(caller.id, 1);
    const results = ofType(log, "tool/result").map((e) => e.data);
    expect(results.map((r) => r.isError)).toEqual([true, true, true]);
    const byCall = new Map(results.map((r) => [r.toolCallId, r.content[0].text]));
    const calls = ofType(log, "assistant/message")[0]!.data.toolCalls.map((c: any) => byCall.get(c.id));
    expect(calls).toEqual([
      "Error: subagent hit its token limit before finishing",
      "Error: subagent run failed\nDiagnostic: upstream is down",
      "Error: subagent declined the task",
    ]);
    expect(assistantTexts(log).at(-1)).toBe("reported");
  });

  it("the output is the last non-empty assistant message, never a tool's text; with no non-empty message it is []", async () => {
    const parent = await createSession();
    const cases: [string, Record<string, unknown>][] = [
      [
        script({ call: [{ tool: "echo", args: { text: "tool text" } }] }, { say: "final words" }),
        { output: [{ type: "text", text: "final words" }], stopReason: "completed" },
      ],
      [
        script(
          { call: [{ tool: "echo", args: { text: "a" } }] },
          { call: [{ tool: "echo", args: { text: "b" } }] },
          { say: "last" },
        ),
        { output: [{ type: "text", text: "last" }], stopReason: "completed" },
      ],
      [
        script({ call: [{ tool: "echo", args: { text: "only a tool" } }] }, { stop: "max-tokens" }),
        { output: [], stopReason: "max-tokens" },
      ],
      [script({ say: "" }), { output: [], stopReason: "completed" }],
    ];
    for (const [prompt, expected] of cases) {
      const run = await startOneShot(parent.id, { provider: "spawn", prompt });
      expect((await waitForRun(parent.id, run.runId)).result).toEqual(expected);
    }
    // a tool call (empty content) followed by an answer from a real adapter
    const viaTool = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "use the tool",
      model: "openai:fake-model",
    });
    expect((await waitForRun(parent.id, viaTool.runId)).result).toEqual({
      output: [{ type: "text", text: "tool said: ping" }],
      stopReason: "completed",
      usage: { inputTokens: 4, outputTokens: 3 },
    });
  });
});
