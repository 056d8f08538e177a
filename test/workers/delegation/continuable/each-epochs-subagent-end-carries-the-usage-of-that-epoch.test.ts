import { expect, it } from "vitest";
import { createSession, followupOk, startChild } from "../../../support/api";
import { allEvents, endsFor, ofType, settledTimes } from "../../../support/logs";

/**
 * A continuable child's `subagent/end` (one per epoch, in the parent's log) carries the usage of
 * that epoch's own model steps, as a one-shot run's carries its run's (semantics.md §8). The tests'
 * OpenAI-compatible server reports `prompt_tokens` = the number of messages and
 * `completion_tokens` = the words of its answer.
 */

const MODEL = "openai:fake-model";

it("each epoch's subagent/end carries the usage of that epoch's steps, not the child's earlier epochs", async () => {
  const { id: root } = await createSession({ model: MODEL });
  const { childId } = await startChild(root, { prompt: "one two", model: MODEL });
  await settledTimes(root, childId);
  const firstSteps = ofType(await allEvents(childId), "assistant/message").map((e) => e.data.usage);
  expect(firstSteps).toEqual([{ inputTokens: 1, outputTokens: 5 }]); // "hello from fake: one two"

  await followupOk(root, childId, "three four five six");
  const rootLog = await settledTimes(root, childId, 2);
  const steps = ofType(await allEvents(childId), "assistant/message").map((e) => e.data.usage);
  expect(steps).toHaveLength(2);
  const [first, second] = endsFor(rootLog, childId);
  expect(first!.data.usage).toEqual(steps[0]);
  expect(second!.data.usage).toEqual(steps[1]);
  expect(second!.data.usage).toEqual({ inputTokens: 3, outputTokens: 7 });
});
