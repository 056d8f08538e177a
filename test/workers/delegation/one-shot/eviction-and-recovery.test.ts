import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HELD_START_MS } from "../../../../durable-objects/transports/local-runs";
import { Children } from "../../../../durable-objects/store/children";
import { Runs } from "../../../../durable-objects/store/runs";
import { FirstUseTables } from "../../../../durable-objects/store/first-use-tables";
import { tablesIn } from "../../../../durable-objects/store/schema";
import type { ChildInit } from "../../../../src/contract/child-init";
import type { FaultPointName } from "../../../../src/core/faults";
import { api, createSession } from "../../../support/api";
import {
  clock,
  driveToSettlement,
  driveUntil,
  expectExactlyOnce,
  expectQuiet,
  type FaultRule,
  faults,
  INJECTED,
  never,
  removeAllFaults,
  type Started,
  type StartOptions,
  startWithFaults,
} from "../../../support/faults";
import { allEvents, hasSettled, ofType, textOf, waitForEvents } from "../../../support/logs";
import {
  alarmOf,
  evict,
  outboxDrained,
  outboxOf,
  quiesce,
  specOf,
  sqlRows,
  stub,
} from "../../../support/objects";
import { reservedId } from "../../../support/ids";

/**
 * Eviction of the parent or the child at every step of the one-shot protocol, and the recoveries
 * around it (semantics.md §2.2, §5.2, §10.3, §10.4). Each test crashes an object at a named fault
 * point (the plan throws there once, or parks the object for good before its first step), evicts
 * it between steps, lets the retries run (outbox backoff, alarms, boot repair) and then checks the
 * exactly-once rule of a one-shot run (§5.3): one `subagent/start` and one `subagent/end` for the
 * run, one settled result, one child turn, no outbox row left live or dead, and nothing moving
 * afterwards. See test/support/faults.ts for why the clock is frozen and why no object is evicted
 * while it is parked mid-step.
 */

beforeEach(() => clock.freeze());
afterEach(() => {
  removeAllFaults();
  clock.release();
});

/** Throws the first `times` calls at `point`, passes everywhere else. */
function throwAt(point: FaultPointName, times = 1): FaultRule {
  return (p, n) => (p === point && n <= times ? "throw" : undefined);
}

async function headerRows(id: string): Promise<number> {
  const rows = await sqlRows<{ n: number }>(id, "SELECT count(*) AS n FROM header");
  return rows[0]!.n;
}

async function finish(s: Started): Promise<string> {
  const runId = await s.runId();
  await driveToSettlement(s.parentId, s.childId, s.runId);
  await expectExactlyOnce({ parentId: s.parentId, childId: s.childId, runId, output: s.output });
  await expectQuiet([s.parentId, s.childId]);
  return runId;
}

/**
 * Writes what `start()` writes before it calls `init` (the `children` and `runs` rows, in one
 * transaction, with the runtime's own stores) for a new parent and child: the durable state of a
 * parent that died right after its reservation.
 */
async function reserveLikeStart(label: string, options: Pick<StartOptions, "child"> = {}): Promise<Started> {
  const template = await startWithFaults(`template for: ${label}`);
  expect(template.status).toBe(201);
  const templateSpec = await specOf(template.parentId, template.childId);
  const parent = await createSession();
  const parentId = parent.id;
  const reserved = crypto.randomUUID();
  const childId = reservedId(parentId, reserved);
  const runId = crypto.randomUUID();
  const [header] = await sqlRows<{ body: string }>(parentId, "SELECT body FROM header");
  const prompt = `fault test: ${label}`;
  const spec: ChildInit = {
    ...templateSpec,
    id: childId,
    parentSession: parentId,
    runId,
    lineage: [parentId],
    tokenHash: (JSON.parse(header!.body) as { tokenHash: string | null }).tokenHash,
    label,
    prompt: [{ type: "text", text: prompt }],
  };
  const childFaults = faults(childId, options.child?.({ parentId, childId }));
  const parentFaults = faults(parentId);
  await runInDurableObject(stub(parentId), (_instance: unknown, state: DurableObjectState) =>
    state.storage.transactionSync(() => {
      const now = Date.now();
      const tables = new FirstUseTables(state.storage.sql, tablesIn(state.storage.sql));
      new Children(tables.sql("children")).own(childId, "spawn", "one-shot", label, now);
      new Runs(tables.sql("runs")).insert({
        runId,
        childId,
        provider: "spawn",
        local: true,
        callKey: null,
        taskId: null,
        toolName: null,
        spec,
        createdAt: now,
      });
    }),
  );
  // the rows are what an earlier instance left when it died between reserving and publishing: the
  // live instance never saw them written, so it goes too
  await evict(parentId);
  return {
    parentId,
    childId,
    reserved,
    status: 0,
    body: undefined,
    prompt,
    output: `echo: ${prompt}`,
    parentFaults,
    childFaults,
    runId: async () => runId,
  };
}

describe("eviction at every step of the one-shot protocol (semantics.md §5.2, §5.3, §10.4)", () => {
  describe("before init", () => {
    it("a crash in the child's init is retried by the start itself: one child, one start", async () => {
      const s = await startWithFaults("init crashes once", { child: () => throwAt("in-init", 1) });
      expect(s.status).toBe(201);
      expect(s.childFaults.count("in-init")).toBe(2);
      await evict(s.parentId, s.childId);
      await finish(s);
    });

    it("parent evicted right after it reserved the run, before init: its boot repair creates the child once", async () => {
      // No graceful eviction can stop a parent inside its start request (the eviction waits for
      // the request), so the durable state of that crash is written with the parent's own stores.
      const r = await reserveLikeStart("reserved, then the parent died");
      await evict(r.parentId);
      expect(await alarmOf(r.parentId)).not.toBeNull(); // boot repair armed the alarm
      await finish(r);
      expect(r.childFaults.count("in-init")).toBe(1);
    });

    it.each(["parent", "child"] as const)(
      "%s evicted after a start whose init never answered (503): the attempt is held, the retry of the same request creates the child once",
      async (side) => {
        const s = await startWithFaults(`init never answers, ${side}`, {
          child: () => throwAt("in-init", 3),
        });
        expect(s.status).toBe(503);
        expect(s.body.error.code).toBe("OVERLOADED");
        await quiesce([s.parentId, s.childId]);
        // held for the caller's retry: not published, not owned, nothing cancelled, no child yet
        const [held] = await sqlRows<{ state: string; held_until: number | null }>(
          s.parentId,
          "SELECT state, held_until FROM runs",
        );
        expect(held?.state).toBe("starting");
        expect(held?.held_until).toBeGreaterThan(Date.now());
        expect(await sqlRows(s.parentId, "SELECT child_id FROM children")).toEqual([]);
        expect(ofType(await allEvents(s.parentId), "subagent/start")).toEqual([]);
        expect((await api("GET", `/v1/sessions/${s.parentId}`)).body.status).toBe("idle");
        expect(await headerRows(s.childId)).toBe(0);
        expect(await outboxOf(s.parentId)).toEqual([]);

        await evict(side === "parent" ? s.parentId : s.childId);
        const retried = await api("POST", `/v1/sessions/${s.parentId}/subagents`, {
          body: { provider: "spawn", prompt: s.prompt, mode: "one-shot", childId: s.reserved },
        });
        expect(retried.status).toBe(201);
        expect(retried.body).toEqual({ runId: await s.runId(), id: s.childId, local: true });
        await finish(s);
        expect(s.childFaults.count("in-init")).toBe(4);
      },
    );
  });

  describe("after init", () => {
    it("parent evicted after the child's init landed, before it published the start: its repair re-attaches (idempotent init)", async () => {
      // durable state of a parent that died between `init` returning and `subagent/start`
      const release = { delivery: false };
      const r = await reserveLikeStart("init landed, then the parent died", {
        child: () => (point) => (point === "before-send" && !release.delivery ? "throw" : undefined),
      });
      expect(await stub(r.childId).init(await specOf(r.parentId, r.childId))).toEqual({
        ok: true,
        value: { id: r.childId },
      });
      await r.childFaults.reached("before-send");
      await evict(r.parentId);
      release.delivery = true;
      await finish(r);
      expect(r.childFaults.count("in-init")).toBe(2); // the landed init and the repair's, which re-attached
      expect(ofType(await allEvents(r.childId), "subagent/descriptor")).toHaveLength(1);
    });

    it("child evicted while the parent had not published the start: the result's delivery makes the parent finish it", async () => {
      const release = { delivery: false };
      const r = await reserveLikeStart("init landed, child evicted", {
        child: () => (point) => (point === "before-send" && !release.delivery ? "throw" : undefined),
      });
      await stub(r.childId).init(await specOf(r.parentId, r.childId));
      await r.childFaults.reached("before-send");
      await evict(r.childId);
      release.delivery = true;
      await finish(r);
      expect(r.childFaults.count("in-init")).toBe(2);
    });

    /**
     * The child commits its init but the parent never hears: the first `init` RPC runs the init
     * itself (a nested call that passes) and then fails; the start's two retries fail too.
     */
    function ambiguousInit(release: { delivery: boolean }): NonNullable<StartOptions["child"]> {
      return ({ parentId, childId }) =>
        (point, n) => {
          if (point === "in-init" && n === 1) {
            return (async () => {
              const committed = await stub(childId).init(await specOf(parentId, childId));
              if (!committed.ok) throw new Error(`nested init failed: ${JSON.stringify(committed)}`);
              throw new Error(`${INJECTED}: init committed, its answer was lost`);
            })();
          }
          if (point === "in-init" && (n === 3 || n === 4)) return "throw";
          if (point === "before-send" && !release.delivery) return "throw";
          return undefined;
        };
    }

    it("an init that landed although every attempt failed (503) is held for a retry; past the window its child is cancelled and its one result absorbed", async () => {
      const release = { delivery: false };
      const s = await startWithFaults("ambiguous init", { child: ambiguousInit(release) });
      expect(s.status).toBe(503);
      await s.childFaults.reached("before-send");
      await evict(s.parentId, s.childId);
      release.delivery = true;
      await driveUntil(
        [s.parentId, s.childId],
        () => outboxDrained(s.childId),
        "the child's outbox to drain",
      );
      await quiesce([s.parentId, s.childId]);
      // the result came in while the attempt was held: kept in the held row, nothing published
      const [held] = await sqlRows<{ result: string | null; held_until: number | null }>(
        s.parentId,
        "SELECT result, held_until FROM runs",
      );
      expect(held?.held_until).not.toBeNull();
      expect(JSON.parse(held!.result!).stopReason).toBe("completed");

      // nobody retried: past the window the attempt is abandoned and its child told so
      clock.advance(HELD_START_MS + 1);
      await driveUntil(
        [s.parentId, s.childId],
        async () =>
          (await outboxOf(s.parentId)).some((r) => r.kind === "cancel-run" && r.delivered_at !== null),
        "the abandoned attempt's cancel",
      );
      await quiesce([s.parentId, s.childId]);

      const parentLog = await allEvents(s.parentId);
      expect(parentLog.filter((e) => e.type.startsWith("subagent/"))).toEqual([]);
      expect(await sqlRows(s.parentId, "SELECT run_id FROM runs")).toEqual([]);
      expect(await sqlRows(s.parentId, "SELECT child_id FROM children")).toEqual([]);
      expect((await outboxOf(s.parentId)).map((r) => [r.kind, r.delivered_at !== null, r.dead_at])).toEqual([
        ["cancel-run", true, null],
      ]);
      const childLog = await allEvents(s.childId);
      expect(ofType(childLog, "turn/start")).toHaveLength(1);
      expect(ofType(childLog, "subagent/descriptor")).toHaveLength(1);
      expect((await outboxOf(s.childId)).map((r) => [r.kind, r.delivered_at !== null, r.dead_at])).toEqual([
        ["run-result", true, null],
      ]);
      await expectQuiet([s.parentId, s.childId]);
    });

    // A 503 is "try again": the same request with the same child id re-attaches to the child the
    // lost init created (it ran once, its result is the run's); another request for the id is refused.
    it("after that 503, the same request with the same child id re-attaches; a different request for the id is DUPLICATE_CHILD", async () => {
      const release = { delivery: true };
      const s = await startWithFaults("ambiguous init, then retry", { child: ambiguousInit(release) });
      expect(s.status).toBe(503);
      await quiesce([s.parentId, s.childId]);
      const other = await api("POST", `/v1/sessions/${s.parentId}/subagents`, {
        body: { provider: "spawn", prompt: "another prompt", mode: "one-shot", childId: s.reserved },
      });
      expect(other.status).toBe(409);
      expect(other.body.error.code).toBe("DUPLICATE_CHILD");

      const retried = await api("POST", `/v1/sessions/${s.parentId}/subagents`, {
        body: { provider: "spawn", prompt: s.prompt, mode: "one-shot", childId: s.reserved },
      });
      expect(retried.status).toBe(201);
      expect(retried.body.id).toBe(s.childId);
      await finish(s);
      expect(ofType(await allEvents(s.childId), "turn/start")).toHaveLength(1);

      // a retry of a start that succeeded answers the same run again, with its result
      const again = await api("POST", `/v1/sessions/${s.parentId}/subagents`, {
        body: { mode: "one-shot", childId: s.reserved, prompt: s.prompt, provider: "spawn" },
      });
      expect(again.status).toBe(201);
      expect(again.body).toEqual(retried.body);
      expect(ofType(await allEvents(s.parentId), "subagent/start")).toHaveLength(1);
    });

    it("child evicted after init, before its first step: the alarm runs its one turn", async () => {
      const s = await startWithFaults("child parked after accept", {
        child: () => (point, n) => (point === "before-drive" && n === 1 ? never() : undefined),
      });
      expect(s.status).toBe(201);
      await s.childFaults.reached("before-drive");
      expect(ofType(await allEvents(s.childId), "turn/start")).toEqual([]);

      await evict(s.childId);
      await finish(s);
    });

    it("an alarm handler that crashes twice is retried and the child still answers once", async () => {
      const s = await startWithFaults("alarm crashes", {
        child: () => (point, n) => {
          if (point === "before-drive" && n === 1) return never();
          return point === "in-alarm" && n <= 2 ? "throw" : undefined;
        },
      });
      await s.childFaults.reached("before-drive");
      await evict(s.childId);
      const runId = await s.runId();
      const errors = await driveToSettlement(s.parentId, s.childId, s.runId);
      expect(errors.filter((e) => e.includes(`${INJECTED} at in-alarm`))).toHaveLength(2);
      await expectExactlyOnce({ parentId: s.parentId, childId: s.childId, runId, output: s.output });
      await expectQuiet([s.parentId, s.childId]);
    });
  });

  describe.each(["parent", "child"] as const)("%s evicted", (side) => {
    const target = (s: Started): string => (side === "parent" ? s.parentId : s.childId);

    it("after the child's result was written to its outbox, before the send", async () => {
      const s = await startWithFaults(`outbox write, ${side}`, {
        child: () => throwAt("before-send"),
      });
      expect(s.status).toBe(201);
      await s.childFaults.reached("before-send");
      await quiesce([s.parentId, s.childId]);
      expect(await hasSettled(s.parentId, await s.runId())).toBe(false);
      expect((await outboxOf(s.childId)).map((r) => [r.attempts, r.delivered_at])).toEqual([[1, null]]);

      await evict(target(s));
      await finish(s);
      expect(s.childFaults.count("before-send")).toBe(2);
      expect(s.childFaults.count("after-send")).toBe(1);
      expect((await outboxOf(s.childId))[0]!.attempts).toBe(1);
    });

    it("after the delivery reached the parent, before the parent applied it", async () => {
      const s = await startWithFaults(`before apply, ${side}`, { parent: throwAt("before-apply") });
      expect(s.status).toBe(201);
      await s.parentFaults.reached("before-apply", 1, 3_000);
      await quiesce([s.parentId, s.childId]);
      expect(await hasSettled(s.parentId, await s.runId())).toBe(false);
      expect((await outboxOf(s.childId)).map((r) => [r.attempts, r.delivered_at])).toEqual([[1, null]]);

      await evict(target(s));
      await finish(s);
      expect(s.parentFaults.count("before-apply")).toBe(2);
    });

    it("after the parent applied the result, before the child marked it delivered (ambiguous RPC)", async () => {
      const s = await startWithFaults(`after send, ${side}`, { child: () => throwAt("after-send") });
      expect(s.status).toBe(201);
      await s.childFaults.reached("after-send");
      await quiesce([s.parentId, s.childId]);
      // the parent applied it; the child saw a failure and owes a redelivery
      expect(await hasSettled(s.parentId, await s.runId())).toBe(true);
      expect((await outboxOf(s.childId)).map((r) => [r.attempts, r.delivered_at])).toEqual([[1, null]]);

      await evict(target(s));
      await finish(s);
      expect(s.childFaults.count("after-send")).toBe(2); // delivered twice, applied once
    });
  });
});

describe("recovery around a running one-shot child (semantics.md §2.2, §5.3)", () => {
  it("a parent evicted while its foreground subagent call waits re-attaches to the running child", async () => {
    const parent = await createSession();
    faults(parent.id);
    const script = {
      script: [
        {
          call: [
            {
              tool: "subagent",
              args: { description: "d", prompt: JSON.stringify({ script: [{ think: 500 }, { say: "42" }] }) },
            },
          ],
        },
        { say: "done" },
      ],
    };
    const sent = await api("POST", `/v1/sessions/${parent.id}/messages`, {
      body: { content: JSON.stringify(script) },
    });
    expect(sent.status).toBe(202);
    const started = await waitForEvents(parent.id, (l) => ofType(l, "subagent/start").length > 0, {
      what: "subagent/start",
    });
    const childId = ofType(started, "subagent/start")[0]!.data.id as string;
    // the child's result reaches the parent only after the eviction
    const release = { delivery: false };
    faults(childId, (point) => (point === "before-send" && !release.delivery ? "throw" : undefined));

    await evict(parent.id); // the child is (most likely) still thinking; its result is held back either way
    const before = await allEvents(parent.id);
    expect(ofType(before, "subagent/end")).toEqual([]);
    expect(ofType(before, "tool/result")).toEqual([]);

    release.delivery = true;
    await driveUntil(
      [parent.id, childId],
      async () => ofType(await allEvents(parent.id), "turn/end").length > 0,
      "the parent's turn to end",
    );
    await quiesce([parent.id, childId]);

    const log = await allEvents(parent.id);
    const starts = ofType(log, "subagent/start");
    const ends = ofType(log, "subagent/end");
    expect(starts).toHaveLength(1);
    expect(ends).toHaveLength(1);
    expect(ends[0]!.data.runId).toBe(starts[0]!.data.runId);
    expect(starts[0]!.data.id).toBe(childId);
    const call = ofType(log, "assistant/message")[0]!.data.toolCalls[0];
    expect(ofType(log, "tool/result").map((e) => e.data)).toEqual([
      { toolCallId: call.id, name: "subagent", content: [{ type: "text", text: "42" }], isError: false },
    ]);
    expect(ofType(log, "assistant/message").map((e) => textOf(e.data.content))).toEqual(["", "done"]);
    expect(ofType(log, "turn/start")).toHaveLength(1);
    expect(ofType(log, "turn/end").map((e) => e.data.reason)).toEqual(["completed"]);
    expect(await sqlRows(parent.id, "SELECT child_id, state FROM runs")).toEqual([
      { child_id: childId, state: "settled" },
    ]);

    const childLog = await allEvents(childId);
    expect(ofType(childLog, "turn/start")).toHaveLength(1);
    expect(ofType(childLog, "user/message")).toHaveLength(1);
    expect(ofType(childLog, "assistant/message").map((e) => textOf(e.data.content))).toEqual(["42"]);
    await expectQuiet([parent.id, childId]);
  });

  it("a child evicted mid-turn, while its model call's answer is only in memory, still delivers exactly one result", async () => {
    // A graceful eviction waits for running work, so it cannot cut the think itself short: the
    // instance is parked for good right after the model call returned (the answer lives only in
    // its memory), then evicted; the new instance must run that step again, once.
    const s = await startWithFaults("evicted while thinking", {
      script: { prompt: JSON.stringify({ script: [{ think: 500 }, { say: "42" }] }), output: "42" },
      child: () => (point, n) => (point === "after-model" && n === 1 ? never() : undefined),
    });
    expect(s.status).toBe(201);
    await s.childFaults.reached("after-model");
    await evict(s.childId);
    const mid = await allEvents(s.childId);
    expect(ofType(mid, "turn/start")).toHaveLength(1);
    expect(ofType(mid, "assistant/message")).toEqual([]);
    expect(await alarmOf(s.childId)).not.toBeNull(); // the safety net of the lost step

    await finish(s);
    expect(s.childFaults.count("before-model")).toBe(2); // the lost model step ran again, once
    expect(s.childFaults.count("before-append")).toBe(1);
  });
});
