import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  followupOk,
  sendMessage,
  startChild,
  startOneShot,
  startRun,
  waitForRun,
} from "../../support/api";
import { clock } from "../../support/faults";
import {
  allEvents,
  eventually,
  messagesOf,
  ofType,
  quiet,
  textOf,
  toolResults,
  waitForEvents,
  waitForTurnEnds,
} from "../../support/logs";
import { evict, stub, tablesHash } from "../../support/objects";
import { LONG_TURN, script } from "../../support/scripts";

afterEach(() => clock.release());

const RUN_DEADLINE =
  /^deadline passed: the run was still working 1 s after it was accepted \(deadlineSeconds\)$/;

describe("deadlineSeconds on one-shot starts (README 'Deadlines')", () => {
  it("a run still working at its deadline ends aborted with a diagnostic naming the deadline; its child is interrupted", async () => {
    const { id } = await createSession();
    const run = await startOneShot(id, { prompt: LONG_TURN, deadlineSeconds: 1 });
    const settled = await waitForRun(id, run.runId);
    expect(settled.result).toMatchObject({
      stopReason: "aborted",
      diagnostic: expect.stringMatching(RUN_DEADLINE),
    });
    const child = await waitForTurnEnds(run.id, 1);
    expect(ofType(child, "turn/end")[0]!.data).toMatchObject({ reason: "aborted" });
    const end = ofType(await allEvents(id), "subagent/end");
    expect(end.map((e) => e.data.stopReason)).toEqual(["aborted"]);
  });

  it("a run that finishes in time is not touched by its deadline", async () => {
    const { id } = await createSession();
    const run = await startOneShot(id, { prompt: "quick", deadlineSeconds: 60 });
    const settled = await waitForRun(id, run.runId);
    expect(settled.result).toMatchObject({
      stopReason: "completed",
      output: [{ type: "text", text: "echo: quick" }],
    });
  });

  it("the deadline is an alarm: it holds across the parent's eviction", async () => {
    clock.freeze();
    const { id } = await createSession();
    const run = await startOneShot(id, { prompt: LONG_TURN, deadlineSeconds: 30 });
    await waitForEvents(run.id, (es) => es.some((e) => e.type === "turn/start"));
    await evict(id);
    clock.advance(31_000);
    await runDurableObjectAlarm(stub(id));
    const settled = await waitForRun(id, run.runId);
    expect(settled.result.diagnostic).toMatch(/^deadline passed: the run was still working 30 s/);
  });

  it("the subagent tool's deadline_seconds bounds a foreground child: the model reads the diagnostic", async () => {
    const { id } = await createSession();
    await sendMessage(
      id,
      script({
        call: [
          {
            tool: "subagent",
            args: { description: "slow helper", prompt: LONG_TURN, deadline_seconds: 1 },
          },
        ],
      }),
    );
    const events = await waitForTurnEnds(id, 1);
    const [result] = toolResults(events, "subagent");
    expect(result!.isError).toBe(true);
    expect(result!.text).toMatch(/Diagnostic: deadline passed: the run was still working 1 s/);
  });

  it.each([0, -1, 1.5, 8 * 24 * 3600, "60"])(
    "deadlineSeconds %j is 400 INVALID_REQUEST and starts nothing",
    async (deadlineSeconds) => {
      const { id } = await createSession();
      const before = await tablesHash(id);
      expectError(await startRun(id, { prompt: "x", deadlineSeconds }), 400, "INVALID_REQUEST");
      expectError(
        await api("POST", `/v1/sessions/${id}/subagents`, {
          body: { provider: "spawn", mode: "continuable", label: "c", prompt: "x", deadlineSeconds },
        }),
        400,
        "INVALID_REQUEST",
      );
      expect(await tablesHash(id)).toBe(before);
    },
  );
});

describe("deadlineSeconds on continuable starts bounds each turn (README 'Deadlines')", () => {
  it("a turn still running at its deadline ends aborted saying so, the settlement notice says so, and the next turn gets its own time", async () => {
    const { id } = await createSession();
    const { childId } = await startChild(id, { prompt: LONG_TURN, deadlineSeconds: 1 });
    const child = await waitForTurnEnds(childId, 1);
    expect(ofType(child, "turn/end")[0]!.data).toMatchObject({
      reason: "aborted",
      cause: "deadline passed: the turn was still running 1 s after it started (deadlineSeconds)",
    });
    const notices = await eventually(
      () => allEvents(id),
      (log) => messagesOf(log, "subagent-settled").length === 1,
      { what: "the child's settlement notice" },
    );
    const [notice] = messagesOf(notices, "subagent-settled");
    expect(textOf(notice!.data.content)).toContain(
      `Background subagent ${childId} was stopped before it finished (deadline passed: the turn was still running 1 s`,
    );
    // a follow-up is a new turn with its own deadline: a quick one completes
    await followupOk(id, childId, "quick one");
    const after = await waitForTurnEnds(childId, 2);
    expect(ofType(after, "turn/end")[1]!.data).toMatchObject({ reason: "completed" });
    await quiet(childId);
  });
});
