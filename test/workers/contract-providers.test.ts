import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  expectNoSession,
  sendMessage,
  startOneShot,
  startRun,
  uniqueName,
  UUID,
  view,
  waitForRun,
} from "../support/api";
import { fakeRequestsMentioning, toolNames } from "../support/fake-openai";
import { hold } from "../support/faults";
import {
  allEvents,
  assistantTexts,
  ofType,
  sleep,
  waitForChild,
  waitForEvents,
  waitForTurnEnds,
} from "../support/logs";
import { sqlRows, stub } from "../support/objects";
import { script } from "../support/scripts";

/**
 * Contract section 10, scenarios 14-25 (in-process providers: spawn and fork), over the HTTP API
 * with the scripted model (and the fake OpenAI-compatible server where a request's system prompt
 * and tool list must be seen). Provider names are global to this file's storage: every test that
 * registers one uses a unique name. Every test uses fresh sessions.
 */

/** Turns never overlap and every turn/end closes the open turn (the log replays as balanced). */
function expectBalanced(events: any[]): void {
  let open: number | null = null;
  for (const e of events) {
    if (e.type === "turn/start") {
      expect(open).toBeNull();
      open = e.data.turn;
    } else if (e.type === "turn/end") {
      expect(e.data.turn).toBe(open);
      open = null;
    }
  }
}

describe("contract 10, in-process providers (scenarios 14-25)", () => {
  it("14. a spawn child is its own session: parentSession is the parent, origin subagent, depth parent+1, the run's id is the child session's id, and the parent's model is inherited unless the request names one", async () => {
    const parent = await createSession({ model: "scripted" });
    const run = await startOneShot(parent.id, { provider: "spawn", prompt: "hello child" });
    expect(run.id).toMatch(UUID);
    const child = await view(run.id);
    expect(child).toMatchObject({
      id: run.id,
      parentSession: parent.id,
      origin: "subagent",
      delegationDepth: 1,
      mode: "one-shot",
      model: "scripted",
    });
    expect(child).not.toHaveProperty("seedLength");
    const parentView = await view(parent.id);
    expect(parentView).toMatchObject({ parentSession: null, origin: null, delegationDepth: 0 });
    expect((await waitForRun(parent.id, run.runId)).result.output).toEqual([
      { type: "text", text: "echo: hello child" },
    ]);

    // the root's token reads its descendants; an unrelated session's token learns nothing
    expect((await view(run.id, parent.token)).id).toBe(run.id);
    const stranger = await createSession();
    expect((await api("GET", `/v1/sessions/${run.id}`, { token: stranger.token })).status).toBe(404);

    // the child delegates in turn: its child is one deeper and names it as parent
    const grand = await startOneShot(run.id, { provider: "spawn", prompt: "hello grandchild" });
    expect(await view(grand.id)).toMatchObject({
      parentSession: run.id,
      origin: "subagent",
      delegationDepth: 2,
    });
    expect((await waitForRun(run.id, grand.runId)).result.stopReason).toBe("completed");

    // the request's model overrides the parent's
    const routed = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "routed",
      model: "openai:fake-model",
    });
    expect((await view(routed.id)).model).toBe("openai:fake-model");
    expect((await waitForRun(parent.id, routed.runId)).result).toEqual({
      output: [{ type: "text", text: "hello from fake: routed" }],
      stopReason: "completed",
    });
  });

  it("15. with parent depth 0 and maxDepth 0 a start answers 422 'subagent depth 1 exceeds maxDepth 0' and no child remains; caps apply at every depth, the deployment's included", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const refused = await startRun(parent.id, { provider: "spawn", prompt: "x", maxDepth: 0, childId });
    expectError(refused, 422, "DEPTH_EXCEEDED");
    expect(refused.body.error.message).toBe("subagent depth 1 exceeds maxDepth 0");
    await expectNoSession(childId);
    expect(await sqlRows(parent.id, "SELECT run_id FROM runs")).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT child_id FROM children")).toEqual([]);
    expect(ofType(await allEvents(parent.id), "subagent/start")).toEqual([]);
    // the fork provider applies the same rule
    expectError(
      await startRun(parent.id, { provider: "fork", prompt: "x", maxDepth: 0 }),
      422,
      "DEPTH_EXCEEDED",
    );

    // a chain down to the deployment cap (MAX_DEPTH_CAP = 5): each link is one deeper
    let at = parent.id;
    for (let depth = 1; depth <= 5; depth++) {
      const link = await startOneShot(at, { provider: "spawn", prompt: `depth ${depth}`, maxDepth: depth });
      expect((await view(link.id)).delegationDepth).toBe(depth);
      if (depth === 1) {
        const tooDeep = await startRun(link.id, { provider: "spawn", prompt: "x", maxDepth: 1 });
        expectError(tooDeep, 422, "DEPTH_EXCEEDED");
        expect(tooDeep.body.error.message).toBe("subagent depth 2 exceeds maxDepth 1");
      }
      at = link.id;
    }
    const beyondCap = crypto.randomUUID();
    const capped = await startRun(at, { provider: "spawn", prompt: "x", maxDepth: 100, childId: beyondCap });
    expectError(capped, 422, "DEPTH_EXCEEDED");
    expect(capped.body.error.message).toBe("subagent depth 6 exceeds maxDepth 5");
    await expectNoSession(beyondCap);
  });

  it("16. depth comes from the durable header: a depth-2 child evicted mid-turn delegates at depth 3 from a fresh instance, and the tool's default cap of 3 then refuses depth 4", async () => {
    const root = await createSession();
    const child = await startOneShot(root.id, { provider: "spawn", prompt: "one" });
    await waitForRun(root.id, child.runId);
    const greatGrandScript = script(
      {
        call: [
          { tool: "subagent", args: { description: "too deep", prompt: "x", run_in_background: false } },
        ],
      },
      { say: "great-grandchild done" },
    );
    const grand = await startOneShot(child.id, {
      provider: "spawn",
      prompt: script(
        { think: 400 },
        {
          call: [
            {
              tool: "subagent",
              args: { description: "deeper", prompt: greatGrandScript, run_in_background: false },
            },
          ],
        },
        { say: "grandchild done" },
      ),
    });
    expect((await view(grand.id)).delegationDepth).toBe(2);

    // evict the grandchild while its first step is in flight: a new instance re-runs the step
    await waitForEvents(grand.id, (es) => ofType(es, "turn/start").length === 1);
    await evictDurableObject(stub(grand.id));
    await runDurableObjectAlarm(stub(grand.id));

    const result = await waitForRun(child.id, grand.runId);
    expect(result.result).toEqual({
      output: [{ type: "text", text: "grandchild done" }],
      stopReason: "completed",
    });
    const greatGrand = await waitForChild(grand.id);
    expect(await view(greatGrand)).toMatchObject({
      parentSession: grand.id,
      origin: "subagent",
      delegationDepth: 3,
    });
    expect(ofType(await allEvents(grand.id), "subagent/start")).toHaveLength(1);

    const deepLog = await allEvents(greatGrand);
    const refusal = ofType(deepLog, "tool/result")[0]!.data;
    expect(refusal.isError).toBe(true);
    expect(refusal.content[0].text).toContain("subagent depth 4 exceeds maxDepth 3");
    expect(ofType(deepLog, "subagent/start")).toEqual([]);
    expect(assistantTexts(deepLog).at(-1)).toBe("great-grandchild done");

    // over HTTP the header's depth is the floor as well
    const capped = await startRun(greatGrand, { provider: "spawn", prompt: "x", maxDepth: 3 });
    expectError(capped, 422, "DEPTH_EXCEEDED");
    expect(capped.body.error.message).toBe("subagent depth 4 exceeds maxDepth 3");
  });

  it("17. a dispose issued right after start cancels the child before it calls its model: the result is aborted with no output and the child never answers", async () => {
    // (a) the child's driver is held before its first turn: the dispose lands first
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const gate = hold(childId, "after-accept");
    const run = await startOneShot(parent.id, { provider: "spawn", prompt: "never answered", childId });
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

  // Runtime bug (see the report): a dispose accepted while the start is still pending is lost.
  it("17. a dispose that interleaves with a still-pending start (accepted with 202 before the start answered) still wins: the run ends aborted and the child never answers", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const gate = hold(childId, "in-init");
    const answer = startRun(parent.id, { provider: "spawn", prompt: "should never be answered", childId });
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

  it("18. after publication, disposing a hanging child and interrupting the parent's foreground call both end the child's turn and settle the run as aborted; the child is released", async () => {
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

  // Runtime bug (see the report): a one-shot child's aborted turn leaves its foreground grandchild running.
  it("18. disposing a child whose turn waits on a foreground grandchild also cancels the grandchild: the grandchild's run ends aborted and it never answers", async () => {
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

  it("19. a child hitting its token ceiling ends max-tokens, a failing model ends error with output [] and a diagnostic, a declining model ends refusal; the foreground tool renders each as an error", async () => {
    const parent = await createSession();
    const cases = [
      { prompt: script({ stop: "max-tokens" }), expected: { output: [], stopReason: "max-tokens" } },
      {
        prompt: script({ fail: "upstream is down" }),
        expected: { output: [], stopReason: "error", diagnostic: "upstream is down" },
      },
      { prompt: script({ stop: "refusal" }), expected: { output: [], stopReason: "refusal" } },
    ];
    for (const c of cases) {
      const run = await startOneShot(parent.id, { provider: "spawn", prompt: c.prompt });
      expect((await waitForRun(parent.id, run.runId)).result).toEqual(c.expected);
    }
    // a partial answer survives a token ceiling
    const partial = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "be long",
      model: "openai:fake-model",
    });
    expect((await waitForRun(parent.id, partial.runId)).result).toEqual({
      output: [{ type: "text", text: "this answer is cut" }],
      stopReason: "max-tokens",
    });

    const caller = await createSession();
    const call = (prompt: string, description: string) => ({
      tool: "subagent",
      args: { description, prompt, run_in_background: false },
    });
    await sendMessage(
      caller.id,
      script(
        {
          call: [
            call(script({ stop: "max-tokens" }), "ceiling"),
            call(script({ fail: "upstream is down" }), "broken"),
            call(script({ stop: "refusal" }), "declines"),
          ],
        },
        { say: "reported" },
      ),
    );
    const log = await waitForTurnEnds(caller.id, 1);
    const results = ofType(log, "tool/result").map((e) => e.data);
    expect(results.map((r) => r.isError)).toEqual([true, true, true]);
    const byCall = new Map(results.map((r) => [r.toolCallId, r.content[0].text]));
    const calls = ofType(log, "assistant/message")[0]!.data.toolCalls.map((c: any) => byCall.get(c.id));
    expect(calls).toEqual([
      "Error: subagent hit its token limit before finishing",
      "Error: subagent run failed\nDiagnostic: upstream is down",
      "Error: subagent declined the task",
    ]);
    expect(assistantTexts(log).at(-1)).toBe("reported");
  });

  it("20. the output is the last non-empty assistant message, never a tool's text; with no non-empty message it is []", async () => {
    const parent = await createSession();
    const cases: [string, Record<string, unknown>][] = [
      [
        script({ call: [{ tool: "echo", args: { text: "tool text" } }] }, { say: "final words" }),
        { output: [{ type: "text", text: "final words" }], stopReason: "completed" },
      ],
      [
        script(
          { call: [{ tool: "echo", args: { text: "a" } }] },
          { call: [{ tool: "echo", args: { text: "b" } }] },
          { say: "last" },
        ),
        { output: [{ type: "text", text: "last" }], stopReason: "completed" },
      ],
      [
        script({ call: [{ tool: "echo", args: { text: "only a tool" } }] }, { stop: "max-tokens" }),
        { output: [], stopReason: "max-tokens" },
      ],
      [script({ say: "" }), { output: [], stopReason: "completed" }],
    ];
    for (const [prompt, expected] of cases) {
      const run = await startOneShot(parent.id, { provider: "spawn", prompt });
      expect((await waitForRun(parent.id, run.runId)).result).toEqual(expected);
    }
    // a tool call (empty content) followed by an answer from a real adapter
    const viaTool = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: "use the tool",
      model: "openai:fake-model",
    });
    expect((await waitForRun(parent.id, viaTool.runId)).result).toEqual({
      output: [{ type: "text", text: "tool said: ping" }],
      stopReason: "completed",
    });
  });

  it("21. fork seeds exactly the parent's events through the last turn/end (header seedLength), excludes an open turn, and leaves a parent without a completed turn's child unseeded", async () => {
    // (a) two completed turns, then an HTTP fork
    const parent = await createSession();
    await sendMessage(parent.id, "one");
    await waitForTurnEnds(parent.id, 1);
    await sendMessage(parent.id, "two");
    const parentLog = await waitForTurnEnds(parent.id, 2);
    const seedLength = parentLog.findLastIndex((e) => e.type === "turn/end") + 1;
    expect(seedLength).toBe(parentLog.length);

    const fork = await startOneShot(parent.id, { provider: "fork", prompt: "forked question" });
    expect((await waitForRun(parent.id, fork.runId)).result).toEqual({
      output: [{ type: "text", text: "echo: forked question" }],
      stopReason: "completed",
    });
    expect(await view(fork.id)).toMatchObject({ parentSession: parent.id, delegationDepth: 1, seedLength });
    const childLog = await allEvents(fork.id);
    expect(childLog.slice(0, seedLength)).toEqual(parentLog.slice(0, seedLength));
    expect(childLog[seedLength]).toMatchObject({
      seq: seedLength,
      type: "session/end-seed",
      data: { seedLength },
    });
    expect(childLog[seedLength + 1]).toMatchObject({
      type: "subagent/descriptor",
      data: { version: 2, mode: "one-shot", provider: "fork" },
    });
    expect(ofType(childLog.slice(seedLength), "turn/start").map((e) => e.data.turn)).toEqual([3]);
    expectBalanced(childLog);

    // (b) forking from inside the parent's open turn: the open turn is not part of the seed
    const busy = await createSession();
    await sendMessage(busy.id, "completed turn");
    await waitForTurnEnds(busy.id, 1);
    await sendMessage(
      busy.id,
      script(
        {
          call: [
            {
              tool: "subagent_fork",
              args: { description: "inside", prompt: "from the open turn", run_in_background: false },
            },
          ],
        },
        { say: "parent resumed" },
      ),
    );
    const busyLog = await waitForTurnEnds(busy.id, 2);
    const forkId = ofType(busyLog, "subagent/start")[0]!.data.id;
    const firstEnd = busyLog.findIndex((e) => e.type === "turn/end");
    const openStart = busyLog.findLastIndex((e) => e.type === "turn/start");
    expect(ofType(busyLog, "subagent/start")[0]!.seq).toBeGreaterThan(openStart);
    expect((await view(forkId)).seedLength).toBe(firstEnd + 1);
    const forkLog = await allEvents(forkId);
    expect(forkLog.slice(0, firstEnd + 1)).toEqual(busyLog.slice(0, firstEnd + 1));
    expect(forkLog[firstEnd + 1]).toMatchObject({
      type: "session/end-seed",
      data: { seedLength: firstEnd + 1 },
    });
    expect(ofType(forkLog, "turn/start").map((e) => e.data.turn)).toEqual([1, 2]);
    expectBalanced(forkLog);
    expect(ofType(busyLog, "tool/result")[0]!.data).toMatchObject({
      name: "subagent_fork",
      isError: false,
      content: [{ type: "text", text: "echo: from the open turn" }],
    });
    expect(assistantTexts(busyLog).at(-1)).toBe("parent resumed");

    // (c) a parent that never completed a turn: the child is fresh, with no seedLength
    const fresh = await createSession();
    const unseeded = await startOneShot(fresh.id, { provider: "fork", prompt: "alone" });
    await waitForRun(fresh.id, unseeded.runId);
    expect(await view(unseeded.id)).not.toHaveProperty("seedLength");
    const unseededLog = await allEvents(unseeded.id);
    expect(unseededLog[0]!.type).toBe("subagent/descriptor");
    expect(ofType(unseededLog, "session/end-seed")).toEqual([]);
    expect(ofType(unseededLog, "turn/start").map((e) => e.data.turn)).toEqual([1]);
    // and from inside a first (still open) turn the seed is empty too
    const opening = await createSession();
    await sendMessage(
      opening.id,
      script(
        {
          call: [
            {
              tool: "subagent_fork",
              args: { description: "first", prompt: "early", run_in_background: false },
            },
          ],
        },
        { say: "ok" },
      ),
    );
    await waitForTurnEnds(opening.id, 1);
    const earlyFork = await waitForChild(opening.id);
    expect(await view(earlyFork)).not.toHaveProperty("seedLength");
    expect((await allEvents(earlyFork))[0]!.type).toBe("subagent/descriptor");
  });

  it("22. a fork child whose turn produced no text returns output [] and never the seeded parent's text", async () => {
    const parent = await createSession();
    await sendMessage(parent.id, "seeded words");
    await waitForTurnEnds(parent.id, 1);
    const silent = await startOneShot(parent.id, { provider: "fork", prompt: script({ say: "" }) });
    const ceiling = await startOneShot(parent.id, {
      provider: "fork",
      prompt: script({ stop: "max-tokens" }),
    });
    expect((await waitForRun(parent.id, silent.runId)).result).toEqual({
      output: [],
      stopReason: "completed",
    });
    expect((await waitForRun(parent.id, ceiling.runId)).result).toEqual({
      output: [],
      stopReason: "max-tokens",
    });
    // the seed does hold the parent's answer, which the result ignored
    expect(assistantTexts(await allEvents(silent.id))).toEqual(["echo: seeded words", ""]);
    const log = await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 2);
    for (const end of ofType(log, "subagent/end")) expect("lastAssistantMessage" in end.data).toBe(false);
  });

  it("23. a per-child persona reaches the child's system prompt and not the parent's; a denied tool is absent from the child's tools and fails as unknown when called; an unknown filter name refuses the start with no child", async () => {
    const tag = crypto.randomUUID();
    const parentPersona = `parent persona ${tag}`;
    const childPersona = `child persona ${tag}`;
    const parent = await createSession({ model: "openai:fake-model", persona: parentPersona });
    await sendMessage(parent.id, `parent probe ${tag}`);
    await waitForTurnEnds(parent.id, 1);
    const child = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: `child probe ${tag}`,
      model: "openai:fake-model",
      persona: childPersona,
      toolFilter: { deny: ["echo"] },
    });
    expect((await waitForRun(parent.id, child.runId)).result.output).toEqual([
      { type: "text", text: `hello from fake: child probe ${tag}` },
    ]);
    const allowOnly = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: `allow probe ${tag}`,
      model: "openai:fake-model",
      toolFilter: { allow: ["echo"] },
    });
    await waitForRun(parent.id, allowOnly.runId);

    const [parentRequest] = await fakeRequestsMentioning(`parent probe ${tag}`);
    const [childRequest] = await fakeRequestsMentioning(`child probe ${tag}`);
    const [allowRequest] = await fakeRequestsMentioning(`allow probe ${tag}`);
    expect(parentRequest!.body.messages[0]).toEqual({ role: "system", content: parentPersona });
    expect(JSON.stringify(parentRequest!.body)).not.toContain(childPersona);
    expect(childRequest!.body.messages[0]).toEqual({ role: "system", content: childPersona });
    expect(JSON.stringify(childRequest!.body)).not.toContain(parentPersona);
    expect(toolNames(parentRequest!)).toContain("echo");
    expect(toolNames(childRequest!)).not.toContain("echo");
    expect(toolNames(childRequest!)).toContain("subagent");
    expect(toolNames(allowRequest!)).toEqual(["echo"]);

    // calling the denied tool is an unknown-tool error result, and the turn goes on
    const scripted = await createSession();
    const denied = await startOneShot(scripted.id, {
      provider: "spawn",
      prompt: script({ call: [{ tool: "echo", args: { text: "hidden" } }] }, { say: "went on" }),
      toolFilter: { deny: ["echo"] },
    });
    expect((await waitForRun(scripted.id, denied.runId)).result.output).toEqual([
      { type: "text", text: "went on" },
    ]);
    const deniedResult = ofType(await allEvents(denied.id), "tool/result")[0]!.data;
    expect(deniedResult).toMatchObject({ name: "echo", isError: true });
    expect(deniedResult.content[0].text).toMatch(/unknown tool "echo"/);

    // an unknown tool name in the filter refuses the start loudly, with no orphaned child
    const orphan = crypto.randomUUID();
    const refused = await startRun(scripted.id, {
      provider: "spawn",
      prompt: "x",
      childId: orphan,
      toolFilter: { allow: ["echo", "no_such_tool"] },
    });
    expectError(refused, 400, "INVALID_REQUEST");
    expect(refused.body.error.message).toContain("no_such_tool");
    await expectNoSession(orphan);
    expect((await sqlRows(scripted.id, "SELECT child_id FROM children")).map((r) => r.child_id)).toEqual([
      denied.id,
    ]);
  });

  it("24. structured output: a valid capture completes with structured and ends the turn, denying later calls; invalid args allow an in-turn retry; prose only is an error with no re-prompt", async () => {
    const parent = await createSession();
    const outputSchema = {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
      additionalProperties: false,
    };
    const run = (prompt: string) => startOneShot(parent.id, { provider: "spawn", prompt, outputSchema });

    // (a) earlier calls run, the capture concludes the turn, later calls in the same response are denied
    const captured = await run(
      script(
        {
          call: [
            { tool: "echo", args: { text: "before" } },
            { tool: "structured_output", args: { answer: "42" } },
            { tool: "echo", args: { text: "after" } },
          ],
        },
        { say: "must not be asked" },
      ),
    );
    expect((await waitForRun(parent.id, captured.runId)).result).toEqual({
      output: [],
      structured: { answer: "42" },
      stopReason: "completed",
    });
    const capturedLog = await allEvents(captured.id);
    expect(ofType(capturedLog, "assistant/message")).toHaveLength(1); // no model call after the capture
    const results = ofType(capturedLog, "tool/result").map((e) => [
      e.data.name,
      e.data.isError,
      e.data.content[0].text,
    ]);
    expect(results).toEqual([
      ["echo", false, "before"],
      ["structured_output", false, "structured output captured"],
      ["echo", true, "Error: denied: the turn already concluded"],
    ]);
    expect(ofType(capturedLog, "turn/end").map((e) => e.data.reason)).toEqual(["completed"]);

    // (b) invalid args are an error result; the model retries in the same turn
    const retried = await run(
      script(
        { call: [{ tool: "structured_output", args: { answer: 5 } }] },
        { call: [{ tool: "structured_output", args: { answer: "second try" } }] },
      ),
    );
    expect((await waitForRun(parent.id, retried.runId)).result).toEqual({
      output: [],
      structured: { answer: "second try" },
      stopReason: "completed",
    });
    const retriedLog = await allEvents(retried.id);
    expect(ofType(retriedLog, "tool/result").map((e) => e.data.isError)).toEqual([true, false]);
    expect(ofType(retriedLog, "turn/start")).toHaveLength(1);

    // (c) prose only: error, the prose kept as output, no second model call
    const prose = await run(script({ say: "just prose" }, { say: "a re-prompt would say this" }));
    const proseResult = (await waitForRun(parent.id, prose.runId)).result;
    expect(proseResult).toMatchObject({
      output: [{ type: "text", text: "just prose" }],
      stopReason: "error",
    });
    expect(proseResult).not.toHaveProperty("structured");
    expect(proseResult.diagnostic).toContain("structured_output");
    expect(assistantTexts(await allEvents(prose.id))).toEqual(["just prose"]);

    // (d) a capture whose tool result failed never counts
    const voided = await run(
      script({ call: [{ tool: "structured_output", args: { wrong: true } }] }, { say: "gave up" }),
    );
    const voidedResult = (await waitForRun(parent.id, voided.runId)).result;
    expect(voidedResult).toMatchObject({ output: [{ type: "text", text: "gave up" }], stopReason: "error" });
    expect(voidedResult).not.toHaveProperty("structured");

    // a child without a schema has no structured_output tool
    const plain = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: script({ call: [{ tool: "structured_output", args: { answer: "x" } }] }, { say: "plain" }),
    });
    expect((await waitForRun(parent.id, plain.runId)).result).toEqual({
      output: [{ type: "text", text: "plain" }],
      stopReason: "completed",
    });
    expect(ofType(await allEvents(plain.id), "tool/result")[0]!.data.isError).toBe(true);
  });

  it("25. deleting a provider does not revoke runs it already returned: a running child still settles, another stays until its holder disposes it, and new starts are refused", async () => {
    const name = uniqueName("unload");
    expect((await api("PUT", `/v1/providers/${name}`, { body: { kind: "spawn" } })).status).toBe(201);
    const parent = await createSession();
    const finishing = await startOneShot(parent.id, {
      provider: name,
      prompt: script({ think: 600 }, { say: "survived" }),
    });
    const hanging = await startOneShot(parent.id, {
      provider: name,
      prompt: script({ think: 30_000 }, { say: "late" }),
    });
    await waitForEvents(hanging.id, (es) => ofType(es, "turn/start").length === 1);

    expect((await api("DELETE", `/v1/providers/${name}`)).status).toBe(204);
    const refused = await startRun(parent.id, { provider: name, prompt: "x" });
    expectError(refused, 404, "NO_PROVIDER");

    expect((await waitForRun(parent.id, finishing.runId)).result).toEqual({
      output: [{ type: "text", text: "survived" }],
      stopReason: "completed",
    });
    // the other child is still running, owned, and named by its provider
    const stillRunning = await api("GET", `/v1/sessions/${parent.id}/runs/${hanging.runId}?wait=300`);
    expect(stillRunning.body).toMatchObject({ state: "running", provider: name });
    expect((await view(hanging.id)).status).toBe("running");
    expect(await sqlRows(parent.id, "SELECT state FROM children WHERE child_id = ?", hanging.id)).toEqual([
      { state: "owned" },
    ]);

    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${hanging.runId}`)).status).toBe(202);
    expect((await waitForRun(parent.id, hanging.runId)).result).toMatchObject({
      output: [],
      stopReason: "aborted",
    });
    const log = await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 2);
    expect(ofType(log, "subagent/end").map((e) => [e.data.provider, e.data.stopReason])).toEqual([
      [name, "completed"],
      [name, "aborted"],
    ]);
    expect(await sqlRows(parent.id, "SELECT state FROM children WHERE child_id = ?", hanging.id)).toEqual([
      { state: "released" },
    ]);
  });
});
