import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  expectNoSession,
  putProvider,
  startOneShot,
  startRun,
  uniqueName,
  UUID,
  view,
  waitForRun,
} from "../../../support/api";
import { hold } from "../../../support/faults";
import { reservedId } from "../../../support/ids";
import { allEvents, lifecycleEvents, sleep, waitForEvents } from "../../../support/logs";
import { sqlRows } from "../../../support/objects";
import { script } from "../../../support/scripts";

/**
 * A one-shot run from its start to its one result (semantics.md §5.2, §5.3), over the HTTP API
 * with the scripted model: the child is a session of its own, created with a one-shot descriptor;
 * `subagent/start` is recorded once the child exists and before the start answers, `subagent/end`
 * once its one result arrived; every start is a run of its own. Every test uses fresh sessions.
 */

describe("a one-shot run from start to result (semantics.md §5.2, §5.3)", () => {
  it("starts a spawn child, records start before end, and returns its result by long-poll", async () => {
    const parent = await createSession();
    const started = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "hi", mode: "one-shot", label: "greet" },
    });
    expect(started.status).toBe(201);
    expect(started.body).toEqual({ runId: expect.any(String), id: expect.any(String), local: true });
    const { runId, id } = started.body;
    const run = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}?wait=5000`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ runId, id, provider: "spawn", local: true, state: "settled" });
    expect(run.body.result).toEqual({
      output: [{ type: "text", text: "echo: hi" }],
      stopReason: "completed",
    });
    const events = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    const lifecycle = events.filter((e) => e.type.startsWith("subagent/"));
    expect(lifecycle.map((e) => e.type)).toEqual(["subagent/start", "subagent/end"]);
    expect(lifecycle[0]!.data).toEqual({ runId, provider: "spawn", id, local: true });
    expect(lifecycle[1]!.data).toEqual({
      runId,
      provider: "spawn",
      id,
      local: true,
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: "echo: hi" }],
    });
    const child = await api("GET", `/v1/sessions/${id}`);
    expect(child.body).toMatchObject({
      id,
      parentSession: parent.id,
      origin: "subagent",
      delegationDepth: 1,
      mode: "one-shot",
      label: "greet",
    });
  });

  it("a spawn child is its own session: parentSession is the parent, origin subagent, depth parent+1, the run's id is the child session's id, and the parent's model is inherited unless the request names one", async () => {
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
      usage: { inputTokens: 1, outputTokens: 4 },
    });
  });

  it("the child is created from the caller's request plus a one-shot descriptor {version 2, mode, provider} that has a label only when one was supplied", async () => {
    const parent = await createSession();
    const name = uniqueName("desc");
    expect((await putProvider(name, { kind: "spawn" })).status).toBe(201);

    const labelled = await startRun(parent.id, {
      provider: name,
      prompt: [
        { type: "text", text: "first block " },
        { type: "text", text: "second block" },
      ],
      label: "with a label ✓",
    });
    const bare = await startRun(parent.id, { provider: "spawn", prompt: "plain prompt" });
    expect([labelled.status, bare.status]).toEqual([201, 201]);
    await waitForRun(parent.id, labelled.body.runId);
    await waitForRun(parent.id, bare.body.runId);

    const labelledLog = await allEvents(labelled.body.id);
    const bareLog = await allEvents(bare.body.id);
    const descriptors = (log: any[]) =>
      log.filter((e) => e.type === "subagent/descriptor").map((e) => e.data);
    expect(descriptors(labelledLog)).toEqual([
      { version: 2, mode: "one-shot", provider: name, label: "with a label ✓" },
    ]);
    expect(descriptors(bareLog)).toEqual([{ version: 2, mode: "one-shot", provider: "spawn" }]);
    expect(Object.keys(descriptors(bareLog)[0])).not.toContain("label");

    for (const log of [labelledLog, bareLog]) {
      // the descriptor is recorded before the child's first model request
      const descriptorAt = log.findIndex((e) => e.type === "subagent/descriptor");
      expect(descriptorAt).toBeGreaterThanOrEqual(0);
      expect(descriptorAt).toBeLessThan(log.findIndex((e) => e.type === "assistant/message"));
    }
    // the prompt arrives as the child's first user message, block for block, from the user
    const firstUser = (log: any[]) => log.find((e) => e.type === "user/message").data;
    expect(firstUser(labelledLog)).toMatchObject({
      content: [
        { type: "text", text: "first block " },
        { type: "text", text: "second block" },
      ],
      source: { kind: "user" },
    });
    expect(firstUser(bareLog).content).toEqual([{ type: "text", text: "plain prompt" }]);

    const labelledView = (await api("GET", `/v1/sessions/${labelled.body.id}`)).body;
    const bareView = (await api("GET", `/v1/sessions/${bare.body.id}`)).body;
    expect(labelledView).toMatchObject({ label: "with a label ✓", mode: "one-shot" });
    expect(bareView).not.toHaveProperty("label");
    expect((await api("GET", `/v1/sessions/${parent.id}/runs/${labelled.body.runId}`)).body.provider).toBe(
      name,
    );

    // every option of the caller's request reaches the child's durable header unchanged
    const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
    const full = await startRun(parent.id, {
      provider: name,
      prompt: script({ call: [{ tool: "structured_output", args: { n: 7 } }] }),
      label: "full",
      model: "scripted",
      persona: "a careful child",
      toolFilter: { deny: ["echo"] },
      outputSchema: schema,
      maxDepth: 2,
    });
    expect(full.status).toBe(201);
    expect((await waitForRun(parent.id, full.body.runId)).result).toEqual({
      output: [],
      structured: { n: 7 },
      stopReason: "completed",
    });
    const [header] = await sqlRows<{ body: string }>(full.body.id, "SELECT body FROM header");
    expect(JSON.parse(header!.body)).toMatchObject({
      id: full.body.id,
      parentSession: parent.id,
      label: "full",
      options: { model: "scripted", persona: "a careful child", toolFilter: { deny: ["echo"] } },
      oneShot: { runId: full.body.runId, provider: name, outputSchema: schema },
    });
    expect(descriptors(await allEvents(full.body.id))).toEqual([
      { version: 2, mode: "one-shot", provider: name, label: "full" },
    ]);
  });

  it("subagent/start is recorded only once the child exists and before the start answers; subagent/end follows the result; both carry one runId on the parent's log only", async () => {
    const parent = await createSession();
    const reserved = crypto.randomUUID();
    const childId = reservedId(parent.id, reserved);
    const gate = hold(childId, "in-init");
    const answer = startRun(parent.id, {
      provider: "spawn",
      childId: reserved,
      prompt: script({ think: 300 }, { say: "finished" }),
    });
    await gate.reached;
    // the provider's start is pending: no lifecycle event, the run is only reserved
    expect(lifecycleEvents(await allEvents(parent.id))).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT state FROM runs")).toEqual([{ state: "starting" }]);
    await expectNoSession(childId);
    let answered = false;
    void answer.then(() => {
      answered = true;
    });
    await sleep(50);
    expect(answered).toBe(false);

    gate.release();
    const started = await answer;
    expect(started.status).toBe(201);
    expect(started.body).toEqual({ runId: expect.stringMatching(UUID), id: childId, local: true });
    const { runId } = started.body;
    // recorded before the answer went out
    const atAnswer = lifecycleEvents(await allEvents(parent.id));
    expect(atAnswer.map((e) => e.type)).toEqual(["subagent/start"]);
    expect(atAnswer[0]!.data).toEqual({ runId, provider: "spawn", id: childId, local: true });
    const running = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}`);
    expect(running.body).toEqual({ runId, id: childId, provider: "spawn", local: true, state: "running" });

    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({ output: [{ type: "text", text: "finished" }], stopReason: "completed" });
    const log = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    const events = lifecycleEvents(log);
    expect(events.map((e) => e.type)).toEqual(["subagent/start", "subagent/end"]);
    expect(events[1]!.data).toEqual({
      runId,
      provider: "spawn",
      id: childId,
      local: true,
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: "finished" }],
    });
    // the delegating parent carries them; the child's own log does not
    expect(lifecycleEvents(await allEvents(childId)).map((e) => e.type)).toEqual(["subagent/descriptor"]);
  });

  it("two starts with identical requests that interleave get distinct runIds and distinct children; a reserved child id is granted to exactly one of two racing starts", async () => {
    const parent = await createSession();
    const body = { provider: "spawn", prompt: "same", label: "twin" };
    const [a, b] = await Promise.all([startRun(parent.id, body), startRun(parent.id, body)]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.runId).not.toBe(b.body.runId);
    expect(a.body.id).not.toBe(b.body.id);
    for (const s of [a, b]) {
      expect(s.body.runId).toMatch(UUID);
      expect(s.body.runId).not.toBe(s.body.id); // a run id is minted, never derived from the child
      expect((await waitForRun(parent.id, s.body.runId)).id).toBe(s.body.id);
    }
    const log = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "subagent/end").length === 2,
    );
    const starts = log.filter((e) => e.type === "subagent/start").map((e) => e.data.runId);
    const ends = log.filter((e) => e.type === "subagent/end").map((e) => e.data.runId);
    expect(new Set(starts)).toEqual(new Set([a.body.runId, b.body.runId]));
    expect(new Set(ends)).toEqual(new Set(starts));

    const other = await createSession();
    const reserved = crypto.randomUUID();
    const childId = reservedId(other.id, reserved);
    const raced = await Promise.all([
      startRun(other.id, { provider: "spawn", prompt: "one", childId: reserved }),
      startRun(other.id, { provider: "spawn", prompt: "two", childId: reserved }),
    ]);
    expect(raced.map((r) => r.status).sort()).toEqual([201, 409]);
    const loser = raced.find((r) => r.status === 409)!;
    expect(loser.body.error.code).toBe("DUPLICATE_CHILD");
    const winner = raced.find((r) => r.status === 201)!;
    expect(winner.body.id).toBe(childId);
    expect(await sqlRows(other.id, "SELECT run_id, child_id FROM runs")).toEqual([
      { run_id: winner.body.runId, child_id: childId },
    ]);
    expect((await waitForRun(other.id, winner.body.runId)).result.stopReason).toBe("completed");
    // a later start reusing the id is refused too, and the child keeps its one run
    expectError(
      await startRun(other.id, { provider: "spawn", prompt: "three", childId: reserved }),
      409,
      "DUPLICATE_CHILD",
    );
    const childLog = await allEvents(childId);
    expect(childLog.filter((e) => e.type === "user/message")).toHaveLength(1);
  });

  it("subagent/end carries lastAssistantMessage equal to a non-empty output, omits the key for empty output, and records error for a failed child", async () => {
    const parent = await createSession();
    const cases = [
      { prompt: script({ say: "the answer" }), stopReason: "completed" },
      { prompt: script({ stop: "refusal" }), stopReason: "refusal" },
      {
        prompt: script({ call: [{ tool: "echo", args: { text: "t" } }] }, { say: "" }),
        stopReason: "completed",
      },
      { prompt: script({ fail: "model exploded" }), stopReason: "error" },
    ];
    const started = [];
    for (const c of cases) {
      const res = await startRun(parent.id, { provider: "spawn", prompt: c.prompt });
      expect(res.status).toBe(201);
      started.push(res.body);
    }
    const results = [];
    for (const s of started) results.push((await waitForRun(parent.id, s.runId)).result);
    const log = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "subagent/end").length === 4,
    );
    const endOf = (runId: string) =>
      log.find((e) => e.type === "subagent/end" && e.data.runId === runId)!.data;

    expect(results[0]).toEqual({ output: [{ type: "text", text: "the answer" }], stopReason: "completed" });
    expect(endOf(started[0].runId)).toMatchObject({
      stopReason: "completed",
      lastAssistantMessage: results[0].output,
    });
    for (const i of [1, 2, 3]) {
      expect(results[i].output).toEqual([]);
      const end = endOf(started[i].runId);
      expect(end.stopReason).toBe(cases[i]!.stopReason);
      expect("lastAssistantMessage" in end).toBe(false);
      expect(end).toEqual({
        runId: started[i].runId,
        provider: "spawn",
        id: started[i].id,
        local: true,
        stopReason: cases[i]!.stopReason,
      });
    }
    expect(results[3].diagnostic).toContain("model exploded");
  });
});
