import { expect, it } from "vitest";
import {
  api,
  createSession,
  followupOk,
  sendMessage,
  startChild,
  startOneShot,
  view,
  waitForRun,
} from "../../support/api";
import { count, quiet, settledTimes, waitForEvents, waitForTurnEnds } from "../../support/logs";

/**
 * A session's view answers its tree's total usage (semantics.md §8): `subtreeUsage`, its own usage
 * plus what its local children reported of theirs as their runs and epochs ended, each child
 * counting its own children the same way. Read from the session alone: no walk of the tree. The
 * tests' OpenAI-compatible server reports `prompt_tokens` = the number of messages and
 * `completion_tokens` = the words of its answer.
 */

const MODEL = "openai:fake-model";

type Usage = { inputTokens: number; outputTokens: number };
const plus = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
});

it("a session's view gives its tree's total usage once its descendants' runs and epochs ended, each counted once", async () => {
  const { id: root } = await createSession({ model: MODEL });
  await sendMessage(root, "the root speaks");
  await waitForTurnEnds(root, 1);
  const { childId: middle } = await startChild(root, { prompt: "one two", model: MODEL });
  await settledTimes(root, middle);
  const afterFirstEpoch = await view(root);
  expect(afterFirstEpoch.subtreeUsage).toEqual(plus(afterFirstEpoch.usage, (await view(middle)).usage));

  // the grandchild's run ends after the middle child's epoch: counted by the middle child now,
  // reported up with its next epoch's end
  const { runId, id: grandchild } = await startOneShot(middle, {
    provider: "spawn",
    prompt: "three four five",
    model: MODEL,
  });
  const run = await waitForRun(middle, runId);
  expect(run.result.subtreeUsage).toBeUndefined(); // counted by the parent, not kept with the result
  const middleView = await view(middle);
  expect(middleView.subtreeUsage).toEqual(plus(middleView.usage, (await view(grandchild)).usage));

  await followupOk(root, middle, "six seven");
  await settledTimes(root, middle, 2);
  // the root takes the middle child's two notices (in one turn or two: a notice that arrives while
  // the first one's turn runs joins it), and every turn that takes them ends
  await waitForEvents(
    root,
    (es) => count(es, "user/message") >= 3 && count(es, "turn/start") === count(es, "turn/end"),
  );
  await quiet(root);
  const rootView = await view(root);
  const listing = await api("GET", `/v1/sessions/${root}/descendants`);
  const own = [root, middle, grandchild].map(async (id) => (await view(id)).usage as Usage);
  const total = (await Promise.all(own)).reduce(plus);
  expect(rootView.subtreeUsage).toEqual(total);
  expect((listing.body as { subtreeUsage: Usage }).subtreeUsage).toEqual(total);
});
