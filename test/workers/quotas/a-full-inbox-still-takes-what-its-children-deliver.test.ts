import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage, startChild } from "../../support/api";
import { count, waitForEvents } from "../../support/logs";
import { evict, inboxOf, noticesFrom } from "../../support/objects";
import { expectRefused, MAX_PENDING_MESSAGES, queueBehind } from "../../support/quotas";
import { script, toolCall } from "../../support/scripts";

/**
 * What MAX_PENDING_MESSAGES does not bound (src/core/quotas.ts): the deliveries a parent must
 * receive, a child's reports and its settlement notices, are admitted however many messages are
 * pending. They are bounded by the parent's children (MAX_CHILDREN_PER_SESSION) and their epochs,
 * and a parent that lost one would never learn how its child ended.
 */

describe("a parent whose inbox holds MAX_PENDING_MESSAGES", () => {
  it("still takes its child's report and settlement notice while refusing a caller's message with 429 INBOX_FULL", async () => {
    const parent = await createSession({ label: "inbox-quota-deliveries" });
    // a turn that thinks for a minute and 999 messages waiting for it, then the 1000th
    const busy = script({ think: 60_000 }, { say: "done" });
    await queueBehind(parent.id, [
      busy,
      ...Array.from({ length: MAX_PENDING_MESSAGES - 1 }, (_, i) => `m${i}`),
    ]);
    await evict(parent.id);
    await waitForEvents(parent.id, (l) => count(l, "turn/start") === 1);
    await sendMessage(parent.id, "the 1000th");
    expectRefused(
      await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content: "one more" } }),
      429,
      "INBOX_FULL",
      /MAX_PENDING_MESSAGES/,
    );

    const { childId } = await startChild(parent.id, {
      prompt: script({ call: [toolCall("report", { output: "halfway" })] }, { say: "finished" }),
    });
    await waitForEvents(parent.id, (l) => count(l, "subagent/end") === 1);
    const inbox = await inboxOf(parent.id);
    expect(
      inbox.filter((m) => m.source.kind === "subagent-report" && m.source.senderSessionId === childId),
    ).toEqual([
      expect.objectContaining({ state: "pending", text: expect.stringMatching(/reported:\nhalfway$/) }),
    ]);
    expect(await noticesFrom(parent.id, childId)).toEqual([expect.objectContaining({ state: "pending" })]);
    expect(inbox.filter((m) => m.state === "pending")).toHaveLength(MAX_PENDING_MESSAGES + 2);
    expect((await api("POST", `/v1/sessions/${parent.id}/interrupt`)).status).toBe(202);
  }, 60_000);
});
