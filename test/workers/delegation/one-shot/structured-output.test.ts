import { describe, expect, it } from "vitest";
import { createSession, startOneShot, waitForRun } from "../../../support/api";
import { allEvents, assistantTexts, ofType } from "../../../support/logs";
import { script } from "../../../support/scripts";

/** A child given an `outputSchema` and its `structured_output` tool (semantics.md §5.6). */

describe("structured output (semantics.md §5.6)", () => {
  it("structured output: a valid capture completes with structured and ends the turn, denying later calls; invalid args allow an in-turn retry; prose only is an error with no re-prompt", async () => {
    const parent = await createSession();
    const outputSchema = {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
      additionalProperties: false,
    };
    const run = (prompt: string) => startOneShot(parent.id, { provider: "spawn", prompt, outputSchema });

    // (a) earlier calls run, the capture concludes the turn, later calls in the same response are denied
    const captured = await run(
      script(
        {
          call: [
            { tool: "echo", args: { text: "before" } },
            { tool: "structured_output", args: { answer: "42" } },
            { tool: "echo", args: { text: "after" } },
          ],
        },
        { say: "must not be asked" },
      ),
    );
    expect((await waitForRun(parent.id, captured.runId)).result).toEqual({
      output: [],
      structured: { answer: "42" },
      stopReason: "completed",
    });
    const capturedLog = await allEvents(captured.id);
    expect(ofType(capturedLog, "assistant/message")).toHaveLength(1); // no model call after the capture
    const results = ofType(capturedLog, "tool/result").map((e) => [
      e.data.name,
      e.data.isError,
      e.data.content[0].text,
    ]);
    expect(results).toEqual([
      ["echo", false, "before"],
      ["structured_output", false, "structured output captured"],
      ["echo", true, "Error: denied: the turn already concluded"],
    ]);
    expect(ofType(capturedLog, "turn/end").map((e) => e.data.reason)).toEqual(["completed"]);

    // (b) invalid args are an error result; the model retries in the same turn
    const retried = await run(
      script(
        { call: [{ tool: "structured_output", args: { answer: 5 } }] },
        { call: [{ tool: "structured_output", args: { answer: "second try" } }] },
      ),
    );
    expect((await waitForRun(parent.id, retried.runId)).result).toEqual({
      output: [],
      structured: { answer: "second try" },
      stopReason: "completed",
    });
    const retriedLog = await allEvents(retried.id);
    expect(ofType(retriedLog, "tool/result").map((e) => e.data.isError)).toEqual([true, false]);
    expect(ofType(retriedLog, "turn/start")).toHaveLength(1);

    // (c) prose only: error, the prose kept as output, no second model call
    const prose = await run(script({ say: "just prose" }, { say: "a re-prompt would say this" }));
    const proseResult = (await waitForRun(parent.id, prose.runId)).result;
    expect(proseResult).toMatchObject({
      output: [{ type: "text", text: "just prose" }],
      stopReason: "error",
    });
    expect(proseResult).not.toHaveProperty("structured");
    expect(proseResult.diagnostic).toContain("structured_output");
    expect(assistantTexts(await allEvents(prose.id))).toEqual(["just prose"]);

    // (d) a capture whose tool result failed never counts
    const voided = await run(
      script({ call: [{ tool: "structured_output", args: { wrong: true } }] }, { say: "gave up" }),
    );
    const voidedResult = (await waitForRun(parent.id, voided.runId)).result;
    expect(voidedResult).toMatchObject({ output: [{ type: "text", text: "gave up" }], stopReason: "error" });
    expect(voidedResult).not.toHaveProperty("structured");

    // a child without a schema has no structured_output tool
    const plain = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: script({ call: [{ tool: "structured_output", args: { answer: "x" } }] }, { say: "plain" }),
    });
    expect((await waitForRun(parent.id, plain.runId)).result).toEqual({
      output: [{ type: "text", text: "plain" }],
      stopReason: "completed",
    });
    expect(ofType(await allEvents(plain.id), "tool/result")[0]!.data.isError).toBe(true);
  });
});
