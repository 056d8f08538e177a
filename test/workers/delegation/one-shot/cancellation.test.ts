import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectNoSession,
  sendMessage,
  startOneShot,
  startRun,
  view,
  waitForRun,
} from "../../../support/api";
import { hold } from "../../../support/faults";
import { reservedId } from "../../../support/ids";
import {
  allEvents,
  assistantTexts,
  ofType,
  sleep,
  waitForChild,
  waitForEvents,
  waitForTurnEnds,
} from "../../../support/logs";
import { sqlRows } from "../../../support/objects";
import { script } from "../../../support/scripts";

/**
 * Disposing and cancelling a one-shot run (semantics.md §5.4): a dispose right after the start,
 * one that races a pending start, a hanging child, the end of the parent turn that waited on a
 * foreground call, and a child whose turn waits on a grandchild.
 */

describe("dispose and cancel (semantics.md §5.4)", () => {
  it("a dispose issued right after start cancels the child before it calls its model: the result is aborted with no output and the child never answers", async () => {
    // (a) the child's driver is held before its first turn: the dispose lands first
    const parent = await createSession();
    const reserved = crypto.randomUUID();
    const childId = reservedId(parent.id, reserved);
    const gate = hold(childId, "before-drive");
    const run = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "never answered",
      childId: reserved,
    });
    await gate.reached;
    const disposed = await api("DELETE", `/v1/sessions/${parent.id}/runs/${run.runId}`);
    expect(disposed.status).toBe(202);
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${run.runId}`)).status).toBe(202); // idempotent
    await waitForEvents(childId, (es) => ofType(es, "agent/inbox/discarded").length === 1);
    gate.release();
    const result = (await waitForRun(parent.id, run.runId)).result;
    expect(result).toMatchObject({ output: [], stopReason: "aborted" });
    const childLog = await allEvents(childId);
    expect(ofType(childLog, "turn/start")).toEqual([]);
    expect(ofType(childLog, "user/message")).toEqual([]);
    expect(ofType(childLog, "assistant/message")).toEqual([]);
    const end = ofType(
      await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 1),
      "subagent/end",
    );
    expect(end[0]!.data).toEqual({
      runId: run.runId,
      provider: "spawn",
      id: childId,
      local: true,
      stopReason: "aborted",
    });
    expect((await view(childId)).status).toBe("idle");

    // (b) no hold: the dispose races the child's first model call and still wins before any answer
    const other = await createSession();
    const racing = await startOneShot(other.id, {
      provider: "spawn",
      prompt: script({ think: 5000 }, { say: "too late" }),
    });
    expect((await api("DELETE", `/v1/sessions/${other.id}/runs/${racing.runId}`)).status).toBe(202);
    expect((await waitForRun(other.id, racing.runId)).result).toMatchObject({
      output: [],
      stopReason: "aborted",
    });
    await sleep(100);
    expect(ofType(await allEvents(racing.id), "assistant/message")).toEqual([]);
    // disposing a settled run changes nothing
    expect((await api("DELETE", `/v1/sessions/${other.id}/runs/${racing.runId}`)).status).toBe(202);
    expect((await waitForRun(other.id, racing.runId)).result.stopReason).toBe("aborted");
  });

  // A regression test: a dispose accepted while the start was still pending used to be lost.
  it("a dispose that interleaves with a still-pending start (accepted with 202 before the start answered) still wins: the run ends aborted and the child never answers", async () => {
    const parent = await createSession();
    const chosen = crypto.randomUUID();
    const childId = reservedId(parent.id, chosen);
    const gate = hold(childId, "in-init");
    const answer = startRun(parent.id, {
      provider: "spawn",
      prompt: "should never be answered",
      childId: chosen,
    });
    await gate.reached;
    const [reserved] = await sqlRows<{ run_id: string; state: string }>(
      parent.id,
      "SELECT run_id, state FROM runs",
    );
    expect(reserved!.state).toBe("starting");
    const disposed = await api("DELETE", `/v1/sessions/${parent.id}/runs/${reserved!.run_id}`);
    expect(disposed.status).toBe(202);
    gate.release();
    const started = await answer;
    // whether the start then answers 201 or refuses, the accepted dispose must hold
    if (started.status === 201) {
      expect(started.body.runId).toBe(reserved!.run_id);
      const result = (await waitForRun(parent.id, reserved!.run_id)).result;
      expect(result).toMatchObject({ output: [], stopReason: "aborted" });
      await sleep(300);
      expect(ofType(await allEvents(childId), "assistant/message")).toEqual([]);
    } else {
      await expectNoSession(childId);
    }
  });

  it("after publication, disposing a hanging child and interrupting the parent's foreground call both end the child's turn and settle the run as aborted; the child is released", async () => {
    const parent = await createSession();
    const run = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: script({ think: 20_000 }, { say: "late" }),
    });
    await waitForEvents(run.id, (es) => ofType(es, "turn/start").length === 1);
    expect((await view(parent.id)).status).toBe("waiting");
    expect((await view(run.id)).status).toBe("running");
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${run.runId}`)).status).toBe(202);
    const result = (await waitForRun(parent.id, run.runId)).result;
    expect(result).toMatchObject({ output: [], stopReason: "aborted" });
    const childLog = await waitForTurnEnds(run.id, 1);
    expect(ofType(childLog, "turn/end").map((e) => e.data.reason)).toEqual(["aborted"]);
    expect(ofType(childLog, "assistant/message")).toEqual([]);
    expect((await view(run.id)).status).toBe("idle");
    expect((await view(parent.id)).status).toBe("idle");
    expect(await sqlRows(parent.id, "SELECT state FROM children")).toEqual([{ state: "released" }]);
    expect(await sqlRows(parent.id, "SELECT state, cancel_requested FROM runs")).toEqual([
      { state: "settled", cancel_requested: 1 },
    ]);
    await sleep(300); // the late answer never arrives
    expect(ofType(await allEvents(run.id), "assistant/message")).toEqual([]);

    // the parent's own turn is the foreground call's signal: interrupting it cancels the child
    const caller = await createSession();
    await sendMessage(
      caller.id,
      script(
        {
          call: [
            {
              tool: "subagent",
              args: {
                description: "slow",
                prompt: script({ think: 20_000 }, { say: "late" }),
                run_in_background: false,
              },
            },
          ],
        },
        { say: "after" },
      ),
    );
    const childId = await waitForChild(caller.id);
    await waitForEvents(childId, (es) => ofType(es, "turn/start").length === 1);
    expect((await api("POST", `/v1/sessions/${caller.id}/interrupt`)).status).toBe(202);
    const callerLog = await waitForEvents(caller.id, (es) => ofType(es, "subagent/end").length === 1);
    expect(ofType(callerLog, "subagent/end")[0]!.data).toMatchObject({ id: childId, stopReason: "aborted" });
    expect(ofType(callerLog, "turn/end").map((e) => e.data.reason)).toEqual(["aborted"]);
    expect(ofType(await waitForTurnEnds(childId, 1), "turn/end")[0]!.data.reason).toBe("aborted");
    expect(assistantTexts(await allEvents(caller.id))).not.toContain("after");
  });

  // A regression test: a one-shot child's aborted turn used to leave its foreground grandchild running.
  it("disposing a child whose turn waits on a foreground grandchild also cancels the grandchild: the grandchild's run ends aborted and it never answers", async () => {
    const parent = await createSession();
    const grandScript = script({ think: 2500 }, { say: "grandchild answered anyway" });
    const run = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: script(
        {
          call: [
            {
              tool: "subagent",
              args: { description: "nested", prompt: grandScript, run_in_background: false },
            },
          ],
        },
        { say: "child late" },
      ),
    });
    const grandId = await waitForChild(run.id);
    await waitForEvents(grandId, (es) => ofType(es, "turn/start").length === 1);
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${run.runId}`)).status).toBe(202);
    expect((await waitForRun(parent.id, run.runId)).result).toMatchObject({
      output: [],
      stopReason: "aborted",
    });

    const childLog = await waitForEvents(run.id, (es) => ofType(es, "subagent/end").length === 1);
    expect(ofType(childLog, "subagent/end")[0]!.data).toMatchObject({ id: grandId, stopReason: "aborted" });
    expect(ofType(await allEvents(grandId), "turn/end").map((e) => e.data.reason)).toEqual(["aborted"]);
    expect(assistantTexts(await allEvents(grandId))).toEqual([]);
  });
});
