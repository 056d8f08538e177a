import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  drain,
  expectError,
  followup,
  followupOk,
  interruptChild,
  sendMessage,
  startChild,
  startContinuable,
  startOneShot,
  view,
} from "../support/api";
import { faults } from "../support/faults";
import {
  allEvents,
  assistantTexts,
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
  turnEndCauses,
  turnReasons,
  userTexts,
  waitForEvents,
} from "../support/logs";
import { activationOf, childRows, inboxOf, noticesFrom, sqlRows, stub } from "../support/objects";
import { LONG_TURN, script, spawnCall } from "../support/scripts";

/**
 * Contract section 10, scenarios 46-58 (settlement, reports, drains, interrupts, epochs), on
 * Durable Objects over the HTTP API with the scripted model. The contract's "manager drain" and
 * "scoped drain" are both `POST /v1/sessions/:id/subagents/drain` without ids (all descendants);
 * "drainContinuableChildren" is the same route with `childIds`. Fresh sessions per test.
 */

/** A child that starts a long-thinking continuable grandchild, then keeps thinking itself. */
function middle(afterSpawn: unknown = { think: 10_000 }, last: unknown = { say: "mid done" }): string {
  return script({ call: [spawnCall("leaf", LONG_TURN)] }, afterSpawn, last);
}

/** Starts root -> mid -> leaf and waits until the leaf's turn runs; returns the ids. */
async function forest(rootId: string, mid: string = middle()): Promise<{ mid: string; leaf: string }> {
  const { childId } = await startChild(rootId, { prompt: mid, label: "mid" });
  const midLog = await waitForEvents(childId, (l) => toolResults(l, "subagent").length === 1);
  const leaf = startedChildId(midLog);
  await waitForEvents(leaf, (l) => count(l, "turn/start") === 1);
  return { mid: childId, leaf };
}

describe("contract 10, drains and notices without waking (scenarios 46-47)", () => {
  it("46. a drained child's notice reaches its parent without waking it: next-step, not waking, no turn/start", async () => {
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

  it("46. a notice taken without waking by a parent that is itself drained does not outlive that parent's drain: after the parent's cold resume it is not pending and never claimed", async () => {
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

  it("47. a rolled-back start gets no notice later; a notice whose delivery fails is retried and the parent records it once with the child's own stop reason", async () => {
    const owner = await createSession();
    const loser = await createSession();
    const childId = crypto.randomUUID();
    let failures = 0;
    const plan = faults(childId, (point) => {
      if (point === "after-outbox-write" && failures < 2) {
        failures++;
        throw new Error("injected: the parent could not be reached");
      }
    });
    try {
      await startChild(owner.id, { prompt: script({ think: 300 }, { stop: "refusal" }), childId });
      expectError(await startContinuable(loser.id, { prompt: "mine?", childId }), 409, "DUPLICATE_CHILD");

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
      expect(await childRows(loser.id)).toEqual([]);
    } finally {
      plan.remove();
    }
  });

  it.skip("47. (skipped: a parent session never leaves a registry on Durable Objects; its object always exists) a notice to a parent that left the registry is dropped without warnings", () => {});
});

describe("contract 10, reports (scenarios 48-49)", () => {
  it("48. quiet reports enter the parent's pending context without a turn; next-step reports wake an idle parent; wakeup reports are their own turn; a busy parent takes repeated reports in acceptance order before a later notice in one batch", async () => {
    // quiet: no wake, no turn, the message id is the one the tool reports
    const quietRoot = await createSession({ reportDelivery: "quiet" });
    const q = await startChild(quietRoot.id, {
      prompt: script(
        { call: [{ tool: "report", args: { output: "quiet word" } }] },
        { think: 1500 },
        { say: "q" },
      ),
    });
    const qLog = await waitForEvents(q.childId, (l) => toolResults(l, "report").length === 1);
    await sleep(300);
    let rootLog = await allEvents(quietRoot.id);
    const quietReport = insertedOf(rootLog, "subagent-report");
    expect(quietReport.map((e) => e.data)).toEqual([
      {
        messageId: expect.stringMatching(/^msg_/),
        lane: "next-step",
        waking: false,
        source: { kind: "subagent-report", form: "relay", senderSessionId: q.childId },
      },
    ]);
    expect(toolResults(qLog, "report")).toEqual([
      expect.objectContaining({
        text: `report accepted by the agent that started you as message ${quietReport[0]!.data.messageId}`,
        isError: false,
      }),
    ]);
    expect(count(rootLog, "turn/start")).toBe(0);
    expect((await inboxOf(quietRoot.id)).map((m) => [m.text, m.state])).toEqual([
      [`Background subagent ${q.childId} reported:\nquiet word`, "pending"],
    ]);
    await settledTimes(quietRoot.id, q.childId);
    rootLog = await quiet(quietRoot.id);
    expect(count(rootLog, "turn/start")).toBe(1); // the notice's turn, which also takes the report
    expect(ofType(rootLog, "agent/inbox/claimed").map((e) => e.data.turn)).toEqual([1, 1]);

    // next-step (the default): an idle parent wakes for the report, before the child settles
    const wakeRoot = await createSession();
    const n = await startChild(wakeRoot.id, {
      prompt: script(
        { call: [{ tool: "report", args: { output: "wake up" } }] },
        { think: 1500 },
        { say: "n" },
      ),
    });
    rootLog = await waitForEvents(wakeRoot.id, (l) => count(l, "turn/end") === 1);
    expect(endsFor(rootLog, n.childId)).toEqual([]);
    expect(insertedOf(rootLog, "subagent-report").map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-step", true],
    ]);
    expect(messagesOf(rootLog, "subagent-report").map((e) => textOf(e.data.content))).toEqual([
      `Background subagent ${n.childId} reported:\nwake up`,
    ]);

    // wakeup: an ordinary follow-up turn of its own
    const followRoot = await createSession({ reportDelivery: "wakeup" });
    const w = await startChild(followRoot.id, {
      prompt: script(
        { call: [{ tool: "report", args: { output: "own turn" } }] },
        { think: 1500 },
        { say: "w" },
      ),
    });
    rootLog = await waitForEvents(followRoot.id, (l) => count(l, "turn/end") === 1);
    expect(endsFor(rootLog, w.childId)).toEqual([]);
    expect(insertedOf(rootLog, "subagent-report").map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-turn", true],
    ]);

    // busy: two reports and the later notice land in one step, in acceptance order
    const busy = await createSession();
    const reporter = script(
      { think: 300 },
      { call: [{ tool: "report", args: { output: "r1" } }] },
      { call: [{ tool: "report", args: { output: "r2" } }] },
      { say: "c final" },
    );
    await sendMessage(
      busy.id,
      script(
        { call: [spawnCall("batch", reporter)] },
        { think: 2500 },
        { call: [{ tool: "list_agents", args: {} }] },
        { say: "not reached" },
      ),
    );
    const started = await waitForEvents(busy.id, (l) => count(l, "subagent/start") === 1);
    const c = startedChildId(started);
    await settledTimes(busy.id, c);
    await waitForEvents(busy.id, (l) => count(l, "turn/end") === 1);
    const busyLog = await quiet(busy.id);
    expect(count(busyLog, "turn/start")).toBe(1);
    const afterTool = busyLog.slice(
      busyLog.findIndex((e) => e.type === "tool/result" && e.data.name === "list_agents") + 1,
    );
    expect(afterTool.slice(0, 7).map((e) => [e.type, e.data.source?.kind])).toEqual([
      ["agent/inbox/claimed", undefined],
      ["user/message", "subagent-report"],
      ["agent/inbox/claimed", undefined],
      ["user/message", "subagent-report"],
      ["agent/inbox/claimed", undefined],
      ["user/message", "subagent-settled"],
      ["assistant/message", undefined],
    ]);
    expect(
      afterTool
        .filter((e) => e.type === "user/message")
        .slice(0, 2)
        .map((e) => textOf(e.data.content)),
    ).toEqual([`Background subagent ${c} reported:\nr1`, `Background subagent ${c} reported:\nr2`]);
  });

  it("49. report exists only for continuable children and travels exactly one edge up: a root or a one-shot child calling it gets an error result; a grandchild's report reaches only its own parent", async () => {
    const root = await createSession();
    await sendMessage(
      root.id,
      script({ call: [{ tool: "report", args: { output: "from a root" } }] }, { say: "r" }),
    );
    const rootTurn = await waitForEvents(root.id, (l) => count(l, "turn/end") === 1);
    expect(toolResults(rootTurn, "report")).toEqual([
      expect.objectContaining({ text: 'Error: unknown tool "report"', isError: true }),
    ]);

    const oneShot = await startOneShot(root.id, {
      prompt: script({ call: [{ tool: "report", args: { output: "from a one-shot" } }] }, { say: "o" }),
    });
    const oneShotLog = await waitForEvents(oneShot.id, (l) => count(l, "turn/end") === 1);
    expect(toolResults(oneShotLog, "report")).toEqual([
      expect.objectContaining({ text: 'Error: unknown tool "report"', isError: true }),
    ]);

    const leafPrompt = script(
      { call: [{ tool: "report", args: { output: "leaf news" } }] },
      { think: 300 },
      { say: "leaf done" },
    );
    const { childId: mid } = await startChild(root.id, {
      prompt: script({ call: [spawnCall("leaf", leafPrompt)] }, { say: "mid waits" }),
    });
    const midFirst = await waitForEvents(mid, (l) => count(l, "turn/end") >= 1);
    const leaf = startedChildId(midFirst);
    await settledTimes(root.id, mid);
    const midLog = await allEvents(mid);
    expect(insertedOf(midLog, "subagent-report").map((e) => e.data.source)).toEqual([
      { kind: "subagent-report", form: "relay", senderSessionId: leaf },
    ]);
    const rootLog = await quiet(root.id);
    expect(insertedOf(rootLog, "subagent-report")).toEqual([]);
    expect((await inboxOf(root.id)).filter((m) => m.text.includes("leaf news"))).toEqual([]);
    expect(toolResults(await allEvents(leaf), "report")[0]!.isError).toBe(false);
  });

  it.skip("49. (skipped: the report tool acts only as its own session; no forged copies, caller signals or vanished parents exist on Durable Objects) forged, aborted, PARENT_UNAVAILABLE and DRAINING reports", () => {});
});

describe("contract 10, drains (scenarios 50-53)", () => {
  it("50. draining all descendants of one parent cancels its child and grandchild, leaves another parent's forest running and accepting follow-ups, and two concurrent identical drains both resolve with one notice per epoch", async () => {
    const p1 = await createSession();
    const p2 = await createSession();
    const one = await forest(p1.id);
    const { childId: other } = await startChild(p2.id, { prompt: LONG_TURN, label: "other" });
    await waitForEvents(other, (l) => count(l, "turn/start") === 1);

    const [d1, d2] = await Promise.all([drain(p1.id), drain(p1.id)]);
    expect([d1.status, d2.status]).toEqual([200, 200]);
    expect(new Set([...d1.body.drained, ...d2.body.drained])).toEqual(new Set([one.mid, one.leaf]));

    await settledTimes(p1.id, one.mid);
    await settledTimes(one.mid, one.leaf);
    expect(turnEndCauses(await allEvents(one.mid))).toEqual([{ reason: "aborted", cause: "parent" }]);
    expect(turnEndCauses(await allEvents(one.leaf))).toEqual([{ reason: "aborted", cause: "parent" }]);
    expect(await activationOf(one.mid)).toEqual([]);
    expect(await activationOf(one.leaf)).toEqual([]);
    expect(endsFor(await quiet(p1.id), one.mid)).toHaveLength(1);
    expect(endsFor(await quiet(one.mid), one.leaf)).toHaveLength(1);

    expect(ofType(await allEvents(other), "turn/end")).toEqual([]);
    expect(await view(other)).toMatchObject({ status: "running" });
    expect((await followup(p2.id, other, "still here")).status).toBe(202);
    expect(await activationOf(other)).toHaveLength(1);
    await drain(p2.id);
  });

  it.skip("50. (skipped: an HTTP drain does not dispose its parent, so admission reopens when it returns; no 'closed until disposed' scope exists) starts and follow-ups under a drained parent reject DRAINING until it is disposed", () => {});

  it("51. draining the descendants of a continuable child releases its children but keeps that child resident: its open turn goes on and it settles later with its own answer", async () => {
    const root = await createSession();
    const { mid, leaf } = await forest(root.id, middle({ think: 1500 }, { say: "mid finished" }));
    const res = await drain(mid);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ drained: [leaf] });
    expect(turnEndCauses(await allEvents(leaf))).toEqual([{ reason: "aborted", cause: "parent" }]);

    expect(await view(mid)).toMatchObject({ status: "running" });
    expect(await activationOf(mid)).toHaveLength(1);
    expect(ofType(await allEvents(mid), "turn/end")).toEqual([]);

    const rootLog = await settledTimes(root.id, mid);
    expect(endsFor(rootLog, mid)[0]!.data).toMatchObject({
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: "mid finished" }],
    });
    const midLog = await allEvents(mid);
    expect(turnReasons(midLog)).toEqual(["completed"]);
    expect(endsFor(midLog, leaf).map((e) => e.data.stopReason)).toEqual(["aborted"]);
    expect(insertedOf(midLog, "subagent-settled").map((e) => [e.data.lane, e.data.waking])).toEqual([
      ["next-step", false],
    ]);
  });

  it.skip("51. (skipped: no stale same-id parent objects on Durable Objects) a drain through a stale parent object changes nothing", () => {});

  it("52. draining selected children [id, id] stops only that child (cause parent) and its descendants, discards its queued work for good, leaves its sibling resident; another parent's drain of the sibling answers 403 and changes nothing", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const a = await forest(root.id);
    const { childId: b } = await startChild(root.id, { prompt: LONG_TURN, label: "sibling" });
    await waitForEvents(b, (l) => count(l, "turn/start") === 1);
    const queued = await followupOk(root.id, a.mid, "queued for a");

    expectError(await drain(stranger.id, [b]), 403, "UNAUTHORIZED");
    expect(ofType(await allEvents(b), "turn/end")).toEqual([]);

    const res = await drain(root.id, [a.mid, a.mid]);
    expect(res.status).toBe(200);
    expect([...res.body.drained].sort()).toEqual([a.mid, a.leaf].sort());

    const midLog = await settledTimes(root.id, a.mid).then(() => allEvents(a.mid));
    expect(turnEndCauses(midLog)).toEqual([{ reason: "aborted", cause: "parent" }]);
    expect(ofType(midLog, "agent/inbox/discarded").map((e) => e.data.messageId)).toEqual([queued]);
    expect(userTexts(midLog)).not.toContain("queued for a");
    expect(userTexts(midLog)).toEqual([middle()]);
    expect(turnEndCauses(await allEvents(a.leaf))).toEqual([{ reason: "aborted", cause: "parent" }]);
    expect(endsFor(await allEvents(root.id), a.mid).map((e) => e.data.stopReason)).toEqual(["aborted"]);

    expect(ofType(await allEvents(b), "turn/end")).toEqual([]);
    expect(await activationOf(b)).toHaveLength(1);
    expect(endsFor(await allEvents(root.id), b)).toEqual([]);

    // the discarded message is never replayed by a later epoch
    await followupOk(root.id, a.mid, "fresh");
    await settledTimes(root.id, a.mid, 2);
    const resumed = await allEvents(a.mid);
    // (a drained grandchild's late notice may also show up here: that is scenario 46's bug)
    expect(messagesOf(resumed, "user").map((e) => textOf(e.data.content))).toEqual([middle(), "fresh"]);
    await drain(root.id);
  });

  it.skip("52. (skipped: no handle disposal on Durable Objects) a handle-disposal failure rejects ACTIVATION_TEARDOWN_FAILED after release", () => {});

  it("53. (durable: the manager drain is the all-descendants drain) grandchildren are stopped before children, and every drained session stays loadable, listable and resumable", async () => {
    const root = await createSession();
    const { mid, leaf } = await forest(root.id);
    const res = await drain(root.id);
    expect(res.status).toBe(200);
    expect([...res.body.drained].sort()).toEqual([mid, leaf].sort());

    const midEnd = ofType(await allEvents(mid), "turn/end")[0]!;
    const leafEnd = ofType(await allEvents(leaf), "turn/end")[0]!;
    expect(leafEnd.data).toMatchObject({ reason: "aborted", cause: "parent" });
    expect(midEnd.data).toMatchObject({ reason: "aborted", cause: "parent" });
    expect(leafEnd.at).toBeLessThanOrEqual(midEnd.at);

    await settledTimes(root.id, mid);
    await settledTimes(mid, leaf);
    for (const id of [mid, leaf]) {
      expect(await view(id)).toMatchObject({ id, status: "idle" });
      expect(await activationOf(id)).toEqual([]);
    }
    const children = await api("GET", `/v1/sessions/${root.id}/children`);
    expect(children.body.entries).toEqual([
      expect.objectContaining({ id: mid, kind: "child", activity: "inactive", hasChildren: true }),
    ]);
    const descendants = await api("GET", `/v1/sessions/${root.id}/descendants`);
    expect(descendants.body.entries.map((e: any) => [e.id, e.parentId, e.depth, e.activity])).toEqual([
      [mid, root.id, 1, "inactive"],
      [leaf, mid, 2, "inactive"],
    ]);
    await followupOk(root.id, mid, "back again");
    const resumed = await settledTimes(root.id, mid, 2);
    expect(endsFor(resumed, mid)[1]!.data.stopReason).toBe("completed");
    const midLog = await allEvents(mid);
    expect(messagesOf(midLog, "user").map((e) => textOf(e.data.content))).toEqual([middle(), "back again"]);
    expect(turnReasons(midLog)).toEqual(["aborted", "completed"]);
  });

  it.skip("53. (skipped: no drain window can be held open deterministically over HTTP) starts and follow-ups during a manager drain reject DRAINING and an in-flight materialization rolls back", () => {});
});

describe("contract 10, interrupts and epochs (scenarios 54-58)", () => {
  it("54. a user interrupt ends the current turn aborted (cause user) once; two queued follow-ups stay parked with no model call; a later follow-up runs them first: [aborted, completed, completed, completed] in one epoch", async () => {
    const root = await createSession();
    const { childId, messageId } = await startChild(root.id, { prompt: LONG_TURN });
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1);
    const one = await followupOk(root.id, childId, "one");
    const two = await followupOk(root.id, childId, "two");

    const res = await interruptChild(root.id, childId);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: true });
    await waitForEvents(childId, (l) => count(l, "turn/end") === 1);
    expect((await interruptChild(root.id, childId)).status).toBe(202);
    const parked = await quiet(childId, 400);
    expect(turnEndCauses(parked)).toEqual([{ reason: "aborted", cause: "user" }]);
    expect(count(parked, "turn/start")).toBe(1);
    expect(count(parked, "assistant/message")).toBe(0);
    expect(ofType(parked, "agent/inbox/claimed").map((e) => e.data.messageId)).toEqual([messageId]);
    expect(await activationOf(childId)).toHaveLength(1);
    expect(endsFor(await allEvents(root.id), childId)).toEqual([]);

    const three = await followupOk(root.id, childId, "three");
    await settledTimes(root.id, childId);
    const log = await allEvents(childId);
    expect(turnReasons(log)).toEqual(["aborted", "completed", "completed", "completed"]);
    expect(ofType(log, "agent/inbox/claimed").map((e) => e.data.messageId)).toEqual([
      messageId,
      one,
      two,
      three,
    ]);
    expect(assistantTexts(log)).toEqual(["echo: one", "echo: two", "echo: three"]);
    const rootLog = await allEvents(root.id);
    expect(startsFor(rootLog, childId)).toHaveLength(1);
    expect(endsFor(rootLog, childId)[0]!.data).toMatchObject({ stopReason: "completed" });
  });

  it("55. interrupt authority: the parent's interrupt spares a resident grandchild; an ancestor's interrupt_agent stops the grandchild (cause parent); self, sibling and stranger are refused without cancelling; unknown, one-shot, settled and already-stopped targets are accepted no-ops", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const { mid, leaf } = await forest(root.id);
    const oneShot = await startOneShot(root.id, {
      prompt: script({ think: 1500 }, { say: "one-shot done" }),
    });
    const { childId: done } = await startChild(root.id, { prompt: "quick", label: "done" });
    await settledTimes(root.id, done);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === 1);

    // refused: a stranger (HTTP and tool), the root over HTTP for its grandchild, a sibling, the root itself
    expectError(await interruptChild(stranger.id, mid), 403, "UNAUTHORIZED");
    expectError(await interruptChild(root.id, leaf), 403, "UNAUTHORIZED");
    await sendMessage(
      stranger.id,
      script({ call: [{ tool: "interrupt_agent", args: { agent_id: mid } }] }, { say: "s" }),
    );
    const strangerLog = await waitForEvents(
      stranger.id,
      (l) => toolResults(l, "interrupt_agent").length === 1,
    );
    expect(toolResults(strangerLog, "interrupt_agent")[0]).toMatchObject({ isError: true });
    expect(toolResults(strangerLog, "interrupt_agent")[0]!.text).toMatch(/not a live descendant/);
    const { childId: sibling } = await startChild(root.id, {
      prompt: script({ call: [{ tool: "interrupt_agent", args: { agent_id: mid } }] }, { say: "tried" }),
      label: "sibling",
    });
    const siblingLog = await waitForEvents(sibling, (l) => toolResults(l, "interrupt_agent").length === 1);
    expect(toolResults(siblingLog, "interrupt_agent")[0]).toMatchObject({ isError: true });
    expect(toolResults(siblingLog, "interrupt_agent")[0]!.text).toMatch(/not a live descendant/);
    await settledTimes(root.id, sibling);
    await quiet(root.id);

    const unknown = crypto.randomUUID();
    const before = count(await allEvents(root.id), "turn/end");
    await sendMessage(
      root.id,
      script(
        {
          call: [
            { tool: "interrupt_agent", args: { agent_id: root.id } },
            { tool: "interrupt_agent", args: { agent_id: unknown } },
            { tool: "interrupt_agent", args: { agent_id: oneShot.id } },
            { tool: "interrupt_agent", args: { agent_id: done } },
          ],
        },
        { say: "asked" },
      ),
    );
    let rootLog = await waitForEvents(root.id, (l) => toolResults(l, "interrupt_agent").length === 4);
    expect(toolResults(rootLog, "interrupt_agent").map((r) => [r.text, r.isError])).toEqual([
      ["Error: an agent cannot interrupt itself", true],
      [`interrupt requested for agent ${unknown}`, false],
      [`interrupt requested for agent ${oneShot.id}`, false],
      [`interrupt requested for agent ${done}`, false],
    ]);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === before + 1);
    expect(turnReasons(await allEvents(root.id)).at(-1)).toBe("completed");
    expect((await api("GET", `/v1/sessions/${unknown}`)).status).toBe(404);
    const oneShotLog = await waitForEvents(oneShot.id, (l) => count(l, "turn/end") === 1);
    expect(turnReasons(oneShotLog)).toEqual(["completed"]);
    expect(assistantTexts(oneShotLog)).toEqual(["one-shot done"]);
    expect(count(await allEvents(done), "turn/start")).toBe(1);
    expect(startsFor(await allEvents(root.id), done)).toHaveLength(1);
    // nothing refused above cancelled anything
    expect(ofType(await allEvents(mid), "turn/end")).toEqual([]);
    expect(ofType(await allEvents(leaf), "turn/end")).toEqual([]);

    // the direct parent's interrupt stops the child only
    expect((await interruptChild(root.id, mid)).status).toBe(202);
    await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    expect(turnEndCauses(await allEvents(mid))).toEqual([{ reason: "aborted", cause: "user" }]);
    await sleep(300);
    expect(ofType(await allEvents(leaf), "turn/end")).toEqual([]);
    expect(await activationOf(leaf)).toHaveLength(1);

    // a deep ancestor stops the grandchild with the parent cause; a second stop is a no-op
    await sendMessage(
      root.id,
      script(
        { call: [{ tool: "interrupt_agent", args: { agent_id: leaf } }] },
        { call: [{ tool: "interrupt_agent", args: { agent_id: leaf } }] },
        { say: "stopped" },
      ),
    );
    rootLog = await waitForEvents(root.id, (l) => toolResults(l, "interrupt_agent").length === 6);
    expect(
      toolResults(rootLog, "interrupt_agent")
        .slice(4)
        .map((r) => [r.text, r.isError]),
    ).toEqual([
      [`interrupt requested for agent ${leaf}`, false],
      [`interrupt requested for agent ${leaf}`, false],
    ]);
    await settledTimes(mid, leaf);
    expect(turnEndCauses(await quiet(leaf))).toEqual([{ reason: "aborted", cause: "parent" }]);
  });

  it.skip("55. (skipped: no stale same-id objects and no disposal window on Durable Objects) stale callers and already-disposing targets", () => {});

  it("56. each epoch's subagent/end carries that epoch's own answer and stop reason: a resumed epoch that hit max-tokens never repeats the previous answer", async () => {
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

  it.skip("56. (skipped: no handle disposal on Durable Objects) a handle-disposal failure turns the epoch's end into error", () => {});

  it("57. (durable: no best-effort flush; every event commits as it happens) evicting a waiting child's object is not a settlement: the rebuilt object takes its grandchild's notice and settles once, completed", async () => {
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

  it.skip("58. (skipped: no continuable setup registry on Durable Objects; the report tool is built in) a setup contribution revoked during install rejects ACTIVATION_SETUP_REVOKED", () => {});
});
