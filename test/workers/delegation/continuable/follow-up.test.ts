import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  followup,
  followupOk,
  startChild,
  startContinuable,
  startOneShot,
  uniqueName,
  view,
} from "../../../support/api";
import { fakeRequestsMentioning } from "../../../support/fake-openai";
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
  startedChildId,
  startsFor,
  textOf,
  toolResults,
  turnReasons,
  userTexts,
  waitForEvents,
} from "../../../support/logs";
import { activationOf, childRows, sqlRows, stub } from "../../../support/objects";
import { script, spawnCall } from "../../../support/scripts";
import { aCallSpan } from "../../../support/trace";

/**
 * Following up a continuable child (semantics.md §6.3): follow-ups queue in the same epoch while
 * it runs, a settled child is cold-resumed in a new epoch (also after its provider was removed),
 * and only the child's durable parent may follow up (§7.2). Every test uses fresh sessions.
 */

describe("follow-up and cold resume (semantics.md §6.3, §7.2)", () => {
  it("two follow-ups sent while the first turn runs queue in call order in the same epoch: user texts [initial, first, second], one subagent/start, one subagent/end", async () => {
    const parent = await createSession();
    const initial = script({ think: 1200 }, { say: "initial done" });
    const { childId, messageId } = await startChild(parent.id, { prompt: initial });
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1);
    const first = await followupOk(parent.id, childId, "first");
    const second = await followupOk(parent.id, childId, "second");
    expect(new Set([messageId, first, second]).size).toBe(3);

    await settledTimes(parent.id, childId);
    const log = await allEvents(childId);
    expect(ofType(log, "agent/inbox/inserted").map((e) => e.data.messageId)).toEqual([
      messageId,
      first,
      second,
    ]);
    expect(userTexts(log)).toEqual([initial, "first", "second"]);
    expect(ofType(log, "agent/inbox/claimed").map((e) => [e.data.messageId, e.data.turn])).toEqual([
      [messageId, 1],
      [first, 2],
      [second, 3],
    ]);
    expect(assistantTexts(log)).toEqual(["initial done", "echo: first", "echo: second"]);
    expect(turnReasons(log)).toEqual(["completed", "completed", "completed"]);

    const parentLog = await allEvents(parent.id);
    expect(startsFor(parentLog, childId)).toHaveLength(1);
    const ends = endsFor(parentLog, childId);
    expect(ends.map((e) => e.data)).toEqual([
      {
        runId: startsFor(parentLog, childId)[0]!.data.runId,
        provider: "spawn",
        id: childId,
        local: true,
        stopReason: "completed",
        lastAssistantMessage: [{ type: "text", text: "echo: second" }],
      },
    ]);
    expect(await sqlRows(childId, "SELECT value FROM flags WHERE name = 'epochs'")).toEqual([{ value: "1" }]);
  });

  it("after settling, a follow-up cold-resumes the same session in a new epoch (new runId, same provider name) with one descriptor, also after the provider was unregistered", async () => {
    const name = uniqueName("keeper");
    expect((await api("PUT", `/v1/providers/${name}`, { body: { kind: "spawn" } })).status).toBe(201);
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { provider: name, prompt: "one", label: "kept" });
    await settledTimes(parent.id, childId);
    expect(await activationOf(childId)).toEqual([]);

    expect((await api("DELETE", `/v1/providers/${name}`)).status).toBe(204);
    expectError(await startContinuable(parent.id, { provider: name, prompt: "new" }), 404, "NO_PROVIDER");

    const res = await followup(parent.id, childId, "two");
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ messageId: expect.stringMatching(/^msg_/) });
    const parentLog = await settledTimes(parent.id, childId, 2);

    const starts = startsFor(parentLog, childId);
    const ends = endsFor(parentLog, childId);
    expect(starts.map((e) => e.data.provider)).toEqual([name, name]);
    expect(starts[0]!.data.runId).not.toBe(starts[1]!.data.runId);
    expect(ends.map((e) => e.data.runId)).toEqual(starts.map((e) => e.data.runId));
    expect(ends.map((e) => e.data.provider)).toEqual([name, name]);
    expect(starts[1]!.seq).toBeGreaterThan(ends[0]!.seq);
    expect(ends[1]!.data.lastAssistantMessage).toEqual([{ type: "text", text: "echo: two" }]);

    const log = await allEvents(childId);
    expect(count(log, "subagent/descriptor")).toBe(1);
    expect(ofType(log, "subagent/descriptor")[0]!.data).toMatchObject({ provider: name, label: "kept" });
    expect(userTexts(log)).toEqual(["one", "two"]);
    expect(assistantTexts(log)).toEqual(["echo: one", "echo: two"]);
    expect(await view(childId)).toMatchObject({ id: childId, parentSession: parent.id, status: "idle" });
    expect(await sqlRows(childId, "SELECT value FROM flags WHERE name = 'epochs'")).toEqual([{ value: "2" }]);
  });

  it("a child that started its own continuable grandchild and went idle stays resident (waiting); a follow-up wakes the same epoch; it settles only after the grandchild settled, with the grandchild's notice in its log", async () => {
    const root = await createSession();
    const grand = script({ think: 2500 }, { say: "grand done" });
    const { childId } = await startChild(root.id, {
      prompt: script({ call: [spawnCall("leaf", grand)] }, { say: "waiting on leaf" }),
    });
    const first = await waitForEvents(childId, (l) => count(l, "turn/end") === 1);
    const grandId = startedChildId(first);

    expect(await view(childId)).toMatchObject({ status: "waiting" });
    expect(await activationOf(childId)).toHaveLength(1);
    expect(endsFor(await allEvents(root.id), childId)).toEqual([]);

    await followupOk(root.id, childId, "ping");
    const woken = await waitForEvents(childId, (l) => count(l, "turn/end") === 2);
    expect(assistantTexts(woken).filter((t) => t !== "")).toEqual(["waiting on leaf", "echo: ping"]);
    let rootLog = await allEvents(root.id);
    expect(startsFor(rootLog, childId)).toHaveLength(1); // the same epoch was woken, no cold resume
    expect(endsFor(rootLog, childId)).toEqual([]);
    expect(endsFor(await allEvents(childId), grandId)).toEqual([]);

    rootLog = await settledTimes(root.id, childId);
    const childLog = await allEvents(childId);
    const grandEnd = endsFor(childLog, grandId);
    expect(grandEnd.map((e) => e.data.stopReason)).toEqual(["completed"]);
    const notice = messagesOf(childLog, "subagent-settled");
    expect(notice.map((e) => e.data.source.senderSessionId)).toEqual([grandId]);
    expect(textOf(notice[0]!.data.content)).toBe(`${finished(grandId)}\nIts closing message:\ngrand done`);
    expect(notice[0]!.seq).toBeLessThan(ofType(childLog, "turn/end").at(-1)!.seq);
    expect(startsFor(rootLog, childId)).toHaveLength(1);
    expect(endsFor(rootLog, childId)[0]!.data).toMatchObject({
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: `echo: ${textOf(notice[0]!.data.content)}` }],
    });
  });

  it("a follow-up from a session that is not the durable direct parent (a stranger, the grandparent) answers 403 UNAUTHORIZED 'belongs to another parent session' and is never logged", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const grand = script({ think: 3000 }, { say: "g" });
    const { childId } = await startChild(root.id, {
      prompt: script({ call: [spawnCall("leaf", grand)] }, { say: "mid waits" }),
    });
    const midLog = await waitForEvents(childId, (l) => count(l, "turn/end") === 1);
    const grandId = startedChildId(midLog);

    const fromStranger = await followup(stranger.id, childId, "hi from stranger");
    expectError(fromStranger, 403, "UNAUTHORIZED", /belongs to another parent session/);
    const fromGrandparent = await followup(root.id, grandId, "hi from grandparent");
    expectError(fromGrandparent, 403, "UNAUTHORIZED", /belongs to another parent session/);
    // a session token acts only as its own session
    const asRoot = await followup(root.id, childId, "forged", stranger.token);
    expectError(asRoot, 404, "NOT_FOUND");

    expect(count(await allEvents(childId), "agent/inbox/inserted")).toBe(1);
    expect(count(await allEvents(grandId), "agent/inbox/inserted")).toBe(1);
    expect(await childRows(stranger.id)).toEqual([]);
    expect(await allEvents(stranger.id)).toEqual([]);
    // the real parent still can
    expect((await followup(root.id, childId, "from the parent")).status).toBe(202);
    await waitForEvents(childId, (l) => userTexts(l).includes("from the parent"));
    const after = await allEvents(childId);
    expect(userTexts(after).filter((t) => t.startsWith("hi from") || t === "forged")).toEqual([]);
  });

  it("a follow-up to a one-shot child answers 422 NOT_RESUMABLE 'no supported continuation state'; to an unknown id 422 NOT_RESUMABLE, creating nothing", async () => {
    const parent = await createSession();
    const run = await startOneShot(parent.id, { prompt: "y" });
    await waitForEvents(parent.id, (l) => endsFor(l, run.id).length === 1);
    const before = await allEvents(run.id);

    const oneShot = await followup(parent.id, run.id, "more");
    expectError(oneShot, 422, "NOT_RESUMABLE", /no supported continuation state/);
    expect(await allEvents(run.id)).toEqual(before);

    const unknown = crypto.randomUUID();
    expectError(await followup(parent.id, unknown, "?"), 422, "NOT_RESUMABLE");
    expect((await api("GET", `/v1/sessions/${unknown}`)).status).toBe(404);
    expect((await childRows(parent.id)).map((r) => r.child_id)).toEqual([run.id]);
    expect(startsFor(await allEvents(parent.id), unknown)).toEqual([]);
  });

  it("interrupting the parent's turn after send_message was accepted neither cancels the child's follow-up turn nor keeps its message out of the child log", async () => {
    const root = await createSession();
    const { childId } = await startChild(root.id, { prompt: "first" });
    await settledTimes(root.id, childId);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === 1); // the notice's turn

    await api("POST", `/v1/sessions/${root.id}/messages`, {
      body: {
        content: script(
          { call: [{ tool: "send_message", args: { subagent_id: childId, message: "after the abort" } }] },
          { think: 10_000 },
          { say: "never said" },
        ),
      },
    });
    const sent = await waitForEvents(root.id, (l) => toolResults(l, "send_message").length === 1);
    expect(toolResults(sent, "send_message")).toEqual([
      expect.objectContaining({
        text: `message queued as the next turn for subagent ${childId}`,
        isError: false,
      }),
    ]);
    expect((await api("POST", `/v1/sessions/${root.id}/interrupt`)).status).toBe(202);
    const interrupted = await waitForEvents(root.id, (l) => count(l, "turn/end") === 2);
    expect(turnReasons(interrupted)).toEqual(["completed", "aborted"]);

    const rootLog = await settledTimes(root.id, childId, 2);
    expect(endsFor(rootLog, childId)[1]!.data).toMatchObject({
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: "echo: after the abort" }],
    });
    const childLog = await allEvents(childId);
    expect(userTexts(childLog)).toEqual(["first", "after the abort"]);
    expect(turnReasons(childLog)).toEqual(["completed", "completed"]);
    expect(insertedOf(childLog, "coordinator").map((e) => e.data.source)).toEqual([
      { kind: "coordinator", form: "relay", senderSessionId: root.id, trace: aCallSpan() },
    ]);
  });

  it("after the parent and the child objects were evicted and rebuilt, the parent's follow-up cold-resumes the child exactly once (authority is the stored parent id); a stranger's is still refused and never logged", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const { childId } = await startChild(root.id, { prompt: "one" });
    await settledTimes(root.id, childId);

    await evictDurableObject(stub(root.id));
    await evictDurableObject(stub(childId));
    const [mine, theirs] = await Promise.all([
      followup(root.id, childId, "two"),
      followup(stranger.id, childId, "intruder"),
    ]);
    expect(mine.status).toBe(202);
    expectError(theirs, 403, "UNAUTHORIZED");

    const rootLog = await settledTimes(root.id, childId, 2);
    expect(startsFor(rootLog, childId)).toHaveLength(2);
    const childLog = await quiet(childId);
    expect(userTexts(childLog)).toEqual(["one", "two"]);
    expect(ofType(childLog, "user/message")[1]!.data.messageId).toBe(mine.body.messageId);
    expect(count(childLog, "subagent/descriptor")).toBe(1);
    expect(endsFor(await quiet(root.id), childId)).toHaveLength(2);
  });

  it("cold resume reapplies the descriptor's route (agentModel) and persona, and a child whose descriptor names the parent's route keeps it", async () => {
    const marker = crypto.randomUUID().slice(0, 8);
    const root = await createSession();
    const { childId } = await startChild(root.id, {
      prompt: `first ${marker}`,
      label: "routed",
      model: "openai:fake-model",
      persona: `You are persona ${marker}.`,
    });
    await settledTimes(root.id, childId);
    await followupOk(root.id, childId, `second ${marker}`);
    await settledTimes(root.id, childId, 2);

    const log = await allEvents(childId);
    expect(ofType(log, "assistant/message").map((e) => e.data.model)).toEqual([
      "openai:fake-model",
      "openai:fake-model",
    ]);
    expect(assistantTexts(log)).toEqual([
      `hello from fake: first ${marker}`,
      `hello from fake: second ${marker}`,
    ]);
    const resumed = (await fakeRequestsMentioning(`second ${marker}`)).filter((r) =>
      JSON.stringify(r.body.messages.at(-1)).includes(`second ${marker}`),
    );
    expect(resumed.length).toBeGreaterThan(0);
    for (const request of resumed) {
      expect(request.body.messages[0]).toEqual({ role: "system", content: `You are persona ${marker}.` });
    }

    // a child that declared no route runs (and resumes) on the parent's route, never another one
    const plainMarker = crypto.randomUUID().slice(0, 8);
    const plain = await startChild(root.id, { prompt: `plain ${plainMarker}` });
    await settledTimes(root.id, plain.childId);
    await followupOk(root.id, plain.childId, `again ${plainMarker}`);
    await settledTimes(root.id, plain.childId, 2);
    const plainLog = await allEvents(plain.childId);
    expect(ofType(plainLog, "subagent/descriptor")[0]!.data).not.toHaveProperty("persona");
    expect(ofType(plainLog, "assistant/message").map((e) => e.data.model)).toEqual(["scripted", "scripted"]);
    expect(await fakeRequestsMentioning(plainMarker)).toEqual([]);
  });

  it("a continuable child inherits providers, backgroundMode and reportDelivery at start, keeps them across a cold resume, and its log gains no second descriptor or policy event", async () => {
    const root = await createSession({
      providers: ["spawn"],
      backgroundMode: "one-shot",
      reportDelivery: "quiet",
    });
    const work = script(
      { call: [{ tool: "report", args: { output: "inherited quiet" } }] },
      { call: [{ tool: "subagent", args: { description: "bg", prompt: "leaf", run_in_background: true } }] },
      { call: [{ tool: "subagent_fork", args: { description: "f", prompt: "x" } }] },
      { say: "mid done" },
    );
    const { childId } = await startChild(root.id, { prompt: work });
    await settledTimes(root.id, childId);

    const header = await sqlRows<{ body: string }>(childId, "SELECT body FROM header");
    expect(JSON.parse(header[0]!.body).options).toMatchObject({
      providers: ["spawn"],
      backgroundMode: "one-shot",
      reportDelivery: "quiet",
    });
    let log = await allEvents(childId);
    expect(toolResults(log).map((r) => [r.name, r.text.replace(/msg_[\w-]+/, "<id>"), r.isError])).toEqual([
      ["report", "report accepted by the agent that started you as message <id>", false],
      ["subagent", "started background subagent task subagent-1", false],
      ["subagent_fork", 'Error: unknown tool "subagent_fork"', true],
    ]);
    const reports = insertedOf(await allEvents(root.id), "subagent-report");
    expect(reports.map((e) => [e.data.lane, e.data.waking])).toEqual([["next-step", false]]);

    await followupOk(root.id, childId, work);
    await settledTimes(root.id, childId, 2);
    log = await allEvents(childId);
    expect(
      toolResults(log)
        .map((r) => [r.name, r.text.replace(/msg_[\w-]+/, "<id>")])
        .slice(3),
    ).toEqual([
      ["report", "report accepted by the agent that started you as message <id>"],
      ["subagent", "started background subagent task subagent-2"],
      ["subagent_fork", 'Error: unknown tool "subagent_fork"'],
    ]);
    expect(
      insertedOf(await allEvents(root.id), "subagent-report").map((e) => [e.data.lane, e.data.waking]),
    ).toEqual([
      ["next-step", false],
      ["next-step", false],
    ]);
    expect(count(log, "subagent/descriptor")).toBe(1);
    const kinds = new Set(log.map((e) => e.type));
    expect([...kinds].filter((t) => !t.startsWith("turn/") && !t.startsWith("agent/inbox/")).sort()).toEqual(
      [
        "assistant/message",
        "subagent/descriptor",
        "subagent/end",
        "subagent/start",
        "tool/result",
        "user/message",
      ].sort(),
    );
  });

  it("refuses a reused child id, a one-shot child's follow-up and a stranger's follow-up", async () => {
    const parent = await createSession();
    const other = await createSession();
    const childId = crypto.randomUUID();
    const first = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "x", mode: "continuable", label: "a", childId },
    });
    expect(first.status).toBe(202);
    // the same request again would be a retry (start.test.ts, "a retried continuable start"); another one is refused
    const dup = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "another prompt", mode: "continuable", label: "a", childId },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("DUPLICATE_CHILD");
    const stranger = await api("POST", `/v1/sessions/${other.id}/subagents/${first.body.childId}/messages`, {
      body: { content: "hey" },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.body.error.code).toBe("UNAUTHORIZED");
    // a follow-up names the child by the id the start answered, never by the reserved childId
    const byReserved = await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/messages`, {
      body: { content: "hey" },
    });
    expect(byReserved.status).toBe(422);
    expect(byReserved.body.error.code).toBe("NOT_RESUMABLE");
    const oneShot = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "y", mode: "one-shot" },
    });
    const notResumable = await api(
      "POST",
      `/v1/sessions/${parent.id}/subagents/${oneShot.body.id}/messages`,
      { body: { content: "more" } },
    );
    expect(notResumable.status).toBe(422);
    expect(notResumable.body.error.code).toBe("NOT_RESUMABLE");
    const unknown = await api("POST", `/v1/sessions/${parent.id}/subagents/${crypto.randomUUID()}/messages`, {
      body: { content: "?" },
    });
    expect(unknown.body.error.code).toBe("NOT_RESUMABLE");
  });
});
