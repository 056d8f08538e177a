import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  drain,
  expectError,
  followupOk,
  interruptChild,
  startChild,
  startContinuable,
  view,
} from "../../../support/api";
import { faults } from "../../../support/faults";
import { occupy, reservedId } from "../../../support/ids";
import {
  allEvents,
  count,
  endsFor,
  finished,
  insertedOf,
  messagesOf,
  ofType,
  quiet,
  settledTimes,
  sleep,
  startedChildId,
  startsFor,
  textOf,
  toolResults,
  turnReasons,
  userTexts,
  waitForEvents,
} from "../../../support/logs";
import { activationOf, childRows, inboxOf, noticesFrom, sqlRows, stub } from "../../../support/objects";
import { LONG_TURN, script, spawnCall } from "../../../support/scripts";
import { forest } from "../../../support/trees";

/**
 * What a parent learns when a continuable child's epoch settles (semantics.md §6.6, §6.7): exactly
 * one notice per epoch with its wording, the lane it takes at an idle, busy or drained parent, its
 * delivery, and the `subagent/start` / `subagent/end` pair of each epoch. Every test uses fresh
 * sessions.
 */

describe("settlement notices (semantics.md §6.6)", () => {
  it("a finished child sends its parent exactly one subagent-settled notice: the completed summary, 'Its closing message:' and the final answer; the source summary is the first line only; sent even though the child reported", async () => {
    const root = await createSession();
    const { childId } = await startChild(root.id, {
      prompt: script(
        { call: [{ tool: "report", args: { output: "early word" } }] },
        { say: "line one\nline two" },
      ),
    });
    await settledTimes(root.id, childId);
    const log = await quiet(root.id);

    const notices = insertedOf(log, "subagent-settled");
    expect(notices.map((e) => e.data.source)).toEqual([
      { kind: "subagent-settled", form: "notice", summary: finished(childId), senderSessionId: childId },
    ]);
    expect(finished(childId)).not.toContain("\n");
    const received = (await inboxOf(root.id)).filter((m) => m.source.kind === "subagent-settled");
    expect(received.map((m) => m.text)).toEqual([
      `${finished(childId)}\nIts closing message:\nline one\nline two`,
    ]);
    expect(insertedOf(log, "subagent-report")).toHaveLength(1);
    expect(endsFor(log, childId)).toHaveLength(1);
    // a notice is a notice: it never reads as the child's own report
    const notice = messagesOf(log, "subagent-settled");
    expect(notice).toHaveLength(1);
    expect(textOf(notice[0]!.data.content)).not.toContain("reported:");
  });

  it("notice wording follows the epoch's stop reason: max-tokens, refusal, error before the first step, interrupted and drained children, each with 'It left no closing message.'", async () => {
    const root = await createSession();
    const maxed = await startChild(root.id, { prompt: script({ stop: "max-tokens" }), label: "maxed" });
    const refused = await startChild(root.id, { prompt: script({ stop: "refusal" }), label: "refused" });
    const failed = await startChild(root.id, { prompt: script({ fail: "model is down" }), label: "failed" });
    const stopped = await startChild(root.id, {
      prompt: script({ think: 10_000 }, { say: "x" }),
      label: "s",
    });
    const drained = await startChild(root.id, {
      prompt: script({ think: 10_000 }, { say: "y" }),
      label: "d",
    });
    await waitForEvents(stopped.childId, (l) => count(l, "turn/start") === 1);
    await waitForEvents(drained.childId, (l) => count(l, "turn/start") === 1);
    expect((await interruptChild(root.id, stopped.childId)).status).toBe(202);
    expect(
      (
        await api("POST", `/v1/sessions/${root.id}/subagents/drain`, {
          body: { childIds: [drained.childId] },
        })
      ).status,
    ).toBe(200);

    const expected: [string, string, string][] = [
      [maxed.childId, "max-tokens", "ran out of room before it finished."],
      [refused.childId, "refusal", "declined the task."],
      [failed.childId, "error", "failed before it finished."],
      [stopped.childId, "aborted", "was stopped before it finished."],
      [drained.childId, "aborted", "was stopped before it finished."],
    ];
    for (const [id] of expected) await settledTimes(root.id, id);
    const log = await allEvents(root.id);
    const inbox = await inboxOf(root.id);
    for (const [id, stopReason, words] of expected) {
      expect(endsFor(log, id).map((e) => e.data)).toEqual([expect.objectContaining({ stopReason, id })]);
      expect(endsFor(log, id)[0]!.data).not.toHaveProperty("lastAssistantMessage");
      const notices = inbox.filter(
        (m) => m.source.kind === "subagent-settled" && m.source.senderSessionId === id,
      );
      expect(notices.map((m) => [m.text, m.source.summary])).toEqual([
        [
          `Background subagent ${id} ${words}\nIt left no closing message.`,
          `Background subagent ${id} ${words}`,
        ],
      ]);
    }
  });

  it("an idle top-level parent starts exactly one turn on a notice; a busy parent takes two simultaneous notices as two next-step items in one step of its open turn and starts no extra turn", async () => {
    const idle = await createSession();
    const { childId } = await startChild(idle.id, { prompt: "quick" });
    await settledTimes(idle.id, childId);
    await waitForEvents(idle.id, (l) => count(l, "turn/end") === 1);
    const idleLog = await quiet(idle.id);
    expect(count(idleLog, "turn/start")).toBe(1);
    const notice = insertedOf(idleLog, "subagent-settled");
    expect(notice.map((e) => [e.data.lane, e.data.waking])).toEqual([["next-turn", true]]);
    expect(ofType(idleLog, "agent/inbox/claimed").map((e) => [e.data.messageId, e.data.turn])).toEqual([
      [notice[0]!.data.messageId, 1],
    ]);

    const busy = await createSession();
    await api("POST", `/v1/sessions/${busy.id}/messages`, {
      body: {
        content: script(
          {
            call: [
              spawnCall("a", script({ think: 600 }, { say: "a" })),
              spawnCall("b", script({ think: 600 }, { say: "b" })),
            ],
          },
          { think: 2500 },
          { call: [{ tool: "list_agents", args: {} }] },
          { say: "not reached: the notices are the newest user messages" },
        ),
      },
    });
    const started = await waitForEvents(busy.id, (l) => count(l, "subagent/start") === 2);
    const [a, b] = [startedChildId(started, 0), startedChildId(started, 1)];
    await settledTimes(busy.id, a);
    await settledTimes(busy.id, b);
    await waitForEvents(busy.id, (l) => count(l, "turn/end") >= 1);
    const log = await quiet(busy.id);
    expect(count(log, "turn/start")).toBe(1);
    const notices = insertedOf(log, "subagent-settled");
    expect(notices.map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-step", true],
      ["next-step", true],
    ]);
    const claims = ofType(log, "agent/inbox/claimed").filter((e) =>
      notices.some((n) => n.data.messageId === e.data.messageId),
    );
    expect(claims.map((e) => e.data.turn)).toEqual([1, 1]);
    // one step: nothing but the two claims and their messages between the list_agents result and the answer
    const listed = toolResults(log, "list_agents");
    expect(listed).toHaveLength(1);
    const afterTool = log.slice(
      log.findIndex((e) => e.type === "tool/result" && e.data.name === "list_agents") + 1,
    );
    expect(afterTool.slice(0, 5).map((e) => e.type)).toEqual([
      "agent/inbox/claimed",
      "user/message",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
    ]);
    expect(
      messagesOf(log, "subagent-settled")
        .map((e) => e.data.source.senderSessionId)
        .sort(),
    ).toEqual([a, b].sort());
  });

  it("a busy parent whose open turn is at its last step when two notices arrive takes both in one more step of that turn and starts no extra turn", async () => {
    const busy = await createSession();
    await api("POST", `/v1/sessions/${busy.id}/messages`, {
      body: {
        content: script(
          {
            call: [
              spawnCall("a", script({ think: 600 }, { say: "a" })),
              spawnCall("b", script({ think: 600 }, { say: "b" })),
            ],
          },
          { think: 2500 },
          { say: "my last step" },
        ),
      },
    });
    const started = await waitForEvents(busy.id, (l) => count(l, "subagent/start") === 2);
    const [a, b] = [startedChildId(started, 0), startedChildId(started, 1)];
    await settledTimes(busy.id, a);
    await settledTimes(busy.id, b);
    await waitForEvents(busy.id, (l) => count(l, "turn/end") >= 1);
    const log = await quiet(busy.id);
    expect(insertedOf(log, "subagent-settled").map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-step", true],
      ["next-step", true],
    ]);
    expect(count(log, "turn/start")).toBe(1);
  });

  it("a continuable parent gets its child's notice while it still owns that child: the notice is taken in the same epoch (one subagent/start upstream), and that epoch's answer is the reply to the notice", async () => {
    const root = await createSession();
    const { childId: mid } = await startChild(root.id, {
      prompt: script(
        { call: [spawnCall("leaf", script({ think: 1200 }, { say: "leaf answer" }))] },
        { say: "mid waits" },
      ),
    });
    const midFirst = await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    const leaf = startedChildId(midFirst);
    expect(await childRows(mid)).toEqual([
      { child_id: leaf, mode: "continuable", state: "owned", provider: "spawn" },
    ]);
    expect(await view(mid)).toMatchObject({ status: "waiting" });

    const rootLog = await settledTimes(root.id, mid);
    const midLog = await allEvents(mid);
    const notice = insertedOf(midLog, "subagent-settled");
    expect(notice.map((e) => [e.data.source.senderSessionId, e.data.lane, e.data.waking])).toEqual([
      [leaf, "next-turn", true],
    ]);
    expect(startsFor(rootLog, mid)).toHaveLength(1);
    expect(turnReasons(midLog)).toEqual(["completed", "completed"]);
    const noticeText = `${finished(leaf)}\nIts closing message:\nleaf answer`;
    expect(userTexts(midLog).at(-1)).toBe(noticeText);
    expect(endsFor(rootLog, mid)[0]!.data.lastAssistantMessage).toEqual([
      { type: "text", text: `echo: ${noticeText}` },
    ]);
    expect(await childRows(mid)).toEqual([
      { child_id: leaf, mode: "continuable", state: "released", provider: "spawn" },
    ]);
    expect(await activationOf(mid)).toEqual([]);
    expect(await sqlRows(mid, "SELECT value FROM flags WHERE name = 'epochs'")).toEqual([{ value: "1" }]);
  });

  it("a drained child's notice reaches its parent without waking it: next-step, not waking, no turn/start", async () => {
    const root = await createSession();
    const { childId } = await startChild(root.id, { prompt: LONG_TURN });
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1);
    const res = await drain(root.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ drained: [childId] });

    await settledTimes(root.id, childId);
    const log = await quiet(root.id);
    expect(insertedOf(log, "subagent-settled").map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-step", false],
    ]);
    expect(count(log, "turn/start")).toBe(0);
    expect(await view(root.id)).toMatchObject({ status: "idle" });
    expect((await noticesFrom(root.id, childId)).map((m) => m.state)).toEqual(["pending"]);
  });

  it("a notice taken without waking by a parent that is itself drained does not outlive that parent's drain: after the parent's cold resume it is not pending and never claimed", async () => {
    const root = await createSession();
    const { mid, leaf } = await forest(root.id);
    const res = await drain(root.id);
    expect(res.status).toBe(200);
    expect([...res.body.drained].sort()).toEqual([mid, leaf].sort());
    await settledTimes(root.id, mid);
    await settledTimes(mid, leaf);
    await quiet(mid);

    await followupOk(root.id, mid, "resume");
    await settledTimes(root.id, mid, 2);
    const midLog = await allEvents(mid);
    const resumedTurn = ofType(midLog, "turn/start").at(-1)!.seq;
    expect(
      ofType(midLog, "user/message")
        .filter((e) => e.seq > resumedTurn)
        .map((e) => textOf(e.data.content)),
    ).toEqual(["resume"]);
    expect((await noticesFrom(mid, leaf)).map((m) => m.state)).not.toContain("claimed");
  });

  it("a rolled-back start gets no notice later; a notice whose delivery fails is retried and the parent records it once with the child's own stop reason", async () => {
    const owner = await createSession();
    const loser = await createSession();
    const reserved = crypto.randomUUID();
    const childId = reservedId(owner.id, reserved);
    let failures = 0;
    const plan = faults(childId, (point) => {
      if (point === "before-send" && failures < 2) {
        failures++;
        throw new Error("injected: the parent could not be reached");
      }
    });
    try {
      await startChild(owner.id, { prompt: script({ think: 300 }, { stop: "refusal" }), childId: reserved });
      // another session of owner's already holds the id the loser's start places its child on:
      // that session's init refuses the start, and the loser rolls it back
      const taken = reservedId(loser.id, reserved);
      await occupy(taken, owner.id);
      expectError(
        await startContinuable(loser.id, { prompt: "mine?", childId: reserved }),
        409,
        "DUPLICATE_CHILD",
      );

      for (let i = 0; i < 200 && endsFor(await allEvents(owner.id), childId).length === 0; i++) {
        await runDurableObjectAlarm(stub(childId));
        await sleep(50);
      }
      expect(failures).toBe(2);
      const ownerLog = await quiet(owner.id);
      expect(endsFor(ownerLog, childId).map((e) => e.data.stopReason)).toEqual(["refusal"]);
      const notices = await noticesFrom(owner.id, childId);
      expect(notices.map((m) => m.text)).toEqual([
        `Background subagent ${childId} declined the task.\nIt left no closing message.`,
      ]);
      const outbox = await sqlRows(childId, "SELECT kind, attempts, delivered_at, dead_at FROM outbox");
      expect(outbox).toEqual([
        { kind: "settled", attempts: 2, delivered_at: expect.any(Number), dead_at: null },
      ]);

      const loserLog = await allEvents(loser.id);
      expect(insertedOf(loserLog, "subagent-settled")).toEqual([]);
      expect(endsFor(loserLog, childId)).toEqual([]);
      expect(endsFor(loserLog, taken)).toEqual([]);
      expect(await childRows(loser.id)).toEqual([]);
    } finally {
      plan.remove();
    }
  });
});

describe("epochs and their ends (semantics.md §6.1, §6.7)", () => {
  it("each epoch's subagent/end carries that epoch's own answer and stop reason: a resumed epoch that hit max-tokens never repeats the previous answer", async () => {
    const root = await createSession();
    const { childId } = await startChild(root.id, { prompt: script({ say: "first answer" }) });
    await settledTimes(root.id, childId);
    await followupOk(root.id, childId, script({ stop: "max-tokens" }));
    await settledTimes(root.id, childId, 2);
    await followupOk(root.id, childId, "third");
    const rootLog = await settledTimes(root.id, childId, 3);

    const ends = endsFor(rootLog, childId).map((e) => e.data);
    expect(ends.map((e) => e.stopReason)).toEqual(["completed", "max-tokens", "completed"]);
    expect(ends[0]!.lastAssistantMessage).toEqual([{ type: "text", text: "first answer" }]);
    expect(ends[1]).not.toHaveProperty("lastAssistantMessage");
    expect(ends[2]!.lastAssistantMessage).toEqual([{ type: "text", text: "echo: third" }]);
    expect(new Set(ends.map((e) => e.runId)).size).toBe(3);
    const notices = await noticesFrom(root.id, childId);
    expect(notices.map((m) => m.text)).toEqual([
      `${finished(childId)}\nIts closing message:\nfirst answer`,
      `Background subagent ${childId} ran out of room before it finished.\nIt left no closing message.`,
      `${finished(childId)}\nIts closing message:\necho: third`,
    ]);
  });

  it("evicting a waiting child's object is not a settlement: the rebuilt object takes its grandchild's notice and settles once, completed", async () => {
    const root = await createSession();
    const { childId: mid } = await startChild(root.id, {
      prompt: script(
        { call: [spawnCall("leaf", script({ think: 1500 }, { say: "leaf done" }))] },
        { say: "mid waits" },
      ),
    });
    const first = await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    const leaf = startedChildId(first);

    await evictDurableObject(stub(mid));
    expect(endsFor(await allEvents(root.id), mid)).toEqual([]);
    expect(await activationOf(mid)).toHaveLength(1);
    expect(await view(mid)).toMatchObject({ status: "waiting" });

    const rootLog = await settledTimes(root.id, mid);
    await sleep(300);
    expect(endsFor(await quiet(root.id), mid).map((e) => e.data.stopReason)).toEqual(["completed"]);
    expect(insertedOf(rootLog, "subagent-settled")).toHaveLength(1);
    const midLog = await allEvents(mid);
    expect(endsFor(midLog, leaf).map((e) => e.data.stopReason)).toEqual(["completed"]);
    expect(turnReasons(midLog)).toEqual(["completed", "completed"]);
    expect(messagesOf(midLog, "subagent-settled")).toHaveLength(1);
    expect(await activationOf(mid)).toEqual([]);
    expect(await sqlRows(mid, "SELECT value FROM flags WHERE name = 'epochs'")).toEqual([{ value: "1" }]);
  });
});
