import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import {
  api,
  createSession,
  drain,
  expectError,
  followup,
  followupOk,
  startChild,
  startContinuable,
  view,
} from "../../../support/api";
import { deferred, faults, never, removeAllFaults } from "../../../support/faults";
import {
  allEvents,
  count,
  endsFor,
  eventually,
  insertedOf,
  messagesOf,
  ofType,
  quiet,
  settledTimes,
  textOf,
  turnEndCauses,
  turnReasons,
  userTexts,
  waitForEvents,
} from "../../../support/logs";
import { activationOf, sqlRows, stub } from "../../../support/objects";
import { LONG_TURN, script } from "../../../support/scripts";
import { forest, middle } from "../../../support/trees";

/**
 * Draining continuable children (semantics.md §6.8): child-first, admission closed while it runs,
 * queued work discarded for good, drained sessions still loadable, listable and resumable; and a
 * drain cut short by a reset is finished by the session's next instance. Every test uses fresh
 * sessions.
 */

const SLOW = script({ think: 60_000 }, { say: "never" });

/** Resets a session's object the hard way: no `finally` of the running instance runs. */
async function reset(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance, state) => state.abort("reset mid-drain")).catch(() => {});
}

async function flagOf(id: string): Promise<string | null> {
  const rows = await sqlRows<{ value: string }>(id, "SELECT value FROM flags WHERE name = 'draining'");
  return rows[0]?.value ?? null;
}

describe("drains (semantics.md §6.8)", () => {
  it("draining all descendants of one parent cancels its child and grandchild, leaves another parent's forest running and accepting follow-ups, and two concurrent identical drains both resolve with one notice per epoch", async () => {
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

  it("draining the descendants of a continuable child releases its children but keeps that child resident: its open turn goes on and it settles later with its own answer", async () => {
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

  it("draining selected children [id, id] stops only that child (cause parent) and its descendants, discards its queued work for good, leaves its sibling resident; another parent's drain of the sibling answers 403 and changes nothing", async () => {
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
    // (only the user's messages: whether a drained grandchild's late notice reaches a drained parent
    // is settlement-notices.test.ts's concern, semantics.md §6.6)
    expect(messagesOf(resumed, "user").map((e) => textOf(e.data.content))).toEqual([middle(), "fresh"]);
    await drain(root.id);
  });

  it("a drain of all descendants stops grandchildren before children, and every drained session stays loadable, listable and resumable", async () => {
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

  it("while a drain of all descendants runs, continuable starts and follow-ups are refused DRAINING; afterwards they are taken", async () => {
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { prompt: LONG_TURN });
    const release = deferred();
    // the drain holds right after it closed admission, until the test lets it go on
    const plan = faults(parent.id, (point, n) =>
      point === "mid-drain" && n === 1 ? release.promise : undefined,
    );
    const draining = drain(parent.id);
    await plan.reached("mid-drain");

    expectError(await startContinuable(parent.id, { prompt: "during the drain" }), 409, "DRAINING");
    expectError(await followup(parent.id, childId, "during the drain"), 409, "DRAINING");
    // a message to the session itself and a one-shot start are still taken (semantics.md §6.8)
    expect(
      (await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content: "hi" } })).status,
    ).toBe(202);

    release.resolve();
    const done = await draining;
    expect(done.status).toBe(200);
    expect(done.body.drained).toEqual([childId]);
    expect((await startContinuable(parent.id, { prompt: "after the drain" })).status).toBe(202);
    expect((await followup(parent.id, childId, "after the drain")).status).toBe(202);
  });

  it("lists children and descendants with status and depth, and drains them child-first", async () => {
    const parent = await createSession();
    const grand = script({ think: 10_000 }, { say: "g" });
    const child = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: {
        provider: "spawn",
        mode: "continuable",
        label: "mid",
        prompt: script(
          {
            call: [
              { tool: "subagent", args: { description: "leaf", prompt: grand, run_in_background: true } },
            ],
          },
          { say: "waiting on leaf" },
        ),
      },
    });
    const { childId } = child.body;
    const childLog = await waitForEvents(childId, (es) => es.some((e) => e.type === "turn/end"));
    const grandId = childLog.find((e) => e.type === "subagent/start")!.data.id;
    const children = await api("GET", `/v1/sessions/${parent.id}/children`);
    expect(children.body.entries).toEqual([
      expect.objectContaining({
        kind: "child",
        id: childId,
        mode: "continuable",
        label: "mid",
        hasChildren: true,
        status: "waiting",
      }),
    ]);
    const descendants = await api("GET", `/v1/sessions/${parent.id}/descendants`);
    expect(descendants.body.entries.map((e: any) => [e.id, e.parentId, e.depth])).toEqual([
      [childId, parent.id, 1],
      [grandId, childId, 2],
    ]);
    const drained = await api("POST", `/v1/sessions/${parent.id}/subagents/drain`, { body: {} });
    expect(drained.status).toBe(200);
    expect(drained.body.drained.sort()).toEqual([childId, grandId].sort());
    const parentLog = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    // a drained child's notice is taken without waking the parent: queued, no turn
    const notice = parentLog.find(
      (e) => e.type === "agent/inbox/inserted" && e.data.source.kind === "subagent-settled",
    );
    expect(notice!.data).toMatchObject({ lane: "next-step", waking: false });
    expect(parentLog.filter((e) => e.type === "turn/start")).toHaveLength(0);
  });
});

describe("a drain cut short by a reset is finished by the next instance (semantics.md §6.8)", () => {
  afterEach(() => removeAllFaults());

  it("a session reset in the middle of its own drain drains its children at boot and takes work again", async () => {
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { prompt: SLOW });
    await waitForEvents(childId, (log) => log.some((e) => e.type === "turn/start"));

    const plan = faults(parent.id, (point, n) => (point === "mid-drain" && n === 1 ? never() : undefined));
    const pending = drain(parent.id).catch(() => null); // its instance dies; the caller gets an error
    await plan.reached("mid-drain");
    expect(await flagOf(parent.id)).toBe("self");
    await reset(parent.id);
    plan.remove();
    await pending;

    // the new instance finishes the drain: the child is settled as drained, admission reopens
    await eventually(
      () => flagOf(parent.id),
      (flag) => flag === null,
      { what: "the draining flag to clear" },
    );
    const childRows = await sqlRows<{ state: string }>(
      parent.id,
      "SELECT state FROM children WHERE child_id = ?",
      childId,
    );
    expect(childRows).toEqual([{ state: "released" }]);
    await waitForEvents(childId, (log) =>
      log.some((e) => e.type === "turn/end" && e.data.reason === "aborted"),
    );
    expect((await view(childId)).status).toBe("idle");

    const again = await startContinuable(parent.id, { prompt: "after the reset" });
    expect(again.status).toBe(202);
    const resumed = await followup(parent.id, childId, "still there?");
    expect(resumed.status).toBe(202);
  });

  it("a child reset in the middle of the drain its parent asked for finishes it and sends its drained notice", async () => {
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { prompt: SLOW });
    await waitForEvents(childId, (log) => log.some((e) => e.type === "turn/start"));

    const plan = faults(childId, (point, n) => (point === "mid-drain" && n === 1 ? never() : undefined));
    const pending = drain(parent.id).catch(() => null);
    await plan.reached("mid-drain");
    expect(await flagOf(childId)).toBe(`parent:${parent.id}`);
    await reset(childId);
    plan.remove();
    await pending;

    await eventually(
      () => flagOf(childId),
      (flag) => flag === null,
      { what: "the child's draining flag to clear" },
    );
    // the parent learns the drained epoch's end once, and neither session refuses work
    const log = await waitForEvents(parent.id, (es) =>
      es.some((e) => e.type === "subagent/end" && e.data.id === childId),
    );
    expect(log.filter((e) => e.type === "subagent/end" && e.data.id === childId)).toHaveLength(1);
    expect(await flagOf(parent.id)).toBeNull();
    expect((await startContinuable(parent.id, { prompt: "after the child's reset" })).status).toBe(202);
    expect((await followup(parent.id, childId, "resume")).status).toBe(202);
  });
});
