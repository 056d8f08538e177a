import { expect, it } from "vitest";
import { api, createSession, sendMessage, startChild, startOneShot, waitForRun } from "../../support/api";
import { quiet, settledTimes, waitForTurnEnds } from "../../support/logs";

/**
 * The descendants listing answers the tree's total usage beside its rows (semantics.md §8):
 * `subtreeUsage`, the listed session's own usage plus that of every session it lists. The tests'
 * OpenAI-compatible server reports `prompt_tokens` = the number of messages and
 * `completion_tokens` = the words of its answer.
 */

const MODEL = "openai:fake-model";

type Usage = { inputTokens: number; outputTokens: number };
const plus = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
});

it("the descendants listing gives the tree's total usage: the session's own plus every listed row's", async () => {
  const { id: root } = await createSession({ model: MODEL });
  await sendMessage(root, "the root speaks");
  await waitForTurnEnds(root, 1);
  const { childId: middle } = await startChild(root, { prompt: "one two", model: MODEL });
  await settledTimes(root, middle);
  const { runId } = await startOneShot(middle, {
    provider: "spawn",
    prompt: "three four five",
    model: MODEL,
  });
  await waitForRun(middle, runId);
  await waitForTurnEnds(root, 2); // the root's turn for the middle child's notice
  await quiet(root);

  const listing = await api("GET", `/v1/sessions/${root}/descendants`);
  expect(listing.status).toBe(200);
  const { entries, subtreeUsage } = listing.body as { entries: any[]; subtreeUsage: Usage };
  expect(entries).toHaveLength(2);
  const rootOwn = ((await api("GET", `/v1/sessions/${root}`)).body as { usage: Usage }).usage;
  expect(rootOwn.outputTokens).toBeGreaterThan(0);
  const rows = entries.map((e) => e.usage as Usage);
  expect(rows.every((u) => u.inputTokens > 0 && u.outputTokens > 0)).toBe(true);
  expect(subtreeUsage).toEqual(rows.reduce(plus, rootOwn));

  // a leaf's listing is empty, and its total is its own usage
  const leaf = entries.find((e) => e.mode === "one-shot");
  const alone = await api("GET", `/v1/sessions/${leaf.id}/descendants`);
  expect(alone.body).toEqual({ entries: [], subtreeUsage: leaf.usage });
});
