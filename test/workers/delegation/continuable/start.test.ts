import { afterEach, describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  followup,
  startChild,
  startContinuable,
  uniqueName,
  view,
} from "../../../support/api";
import { faults, hold, removeAllFaults } from "../../../support/faults";
import {
  allEvents,
  assistantTexts,
  count,
  ofType,
  settledTimes,
  startsFor,
  textOf,
  userTexts,
  waitForEvents,
  type WireEvent,
} from "../../../support/logs";
import { occupy, reservedId } from "../../../support/ids";
import { childRows, sqlRows } from "../../../support/objects";
import { script } from "../../../support/scripts";

/**
 * Starting a continuable child (semantics.md §6.2): the parent answers `202 {childId, messageId}`
 * at the child's inbox acceptance, the child's log holds one continuable descriptor before its
 * first turn, a refused or failed start leaves nothing behind, and a caller-reserved child id names
 * a child in its parent's namespace and is keyed by its request (§10.5). Every test uses fresh
 * sessions.
 */

/** The one descriptor event of a child log, and checks it precedes the first turn. */
function descriptorOf(log: readonly WireEvent[]): Record<string, unknown> {
  const descriptors = ofType(log, "subagent/descriptor");
  expect(descriptors).toHaveLength(1);
  const firstTurn = ofType(log, "turn/start")[0];
  expect(firstTurn).toBeDefined();
  expect(descriptors[0]!.seq).toBeLessThan(firstTurn!.seq);
  return descriptors[0]!.data;
}

describe("starting a continuable child (semantics.md §6.2)", () => {
  it("starts over HTTP, answers at acceptance, follows up after settling with a new epoch, one descriptor", async () => {
    const parent = await createSession();
    const started = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "first", mode: "continuable", label: "helper" },
    });
    expect(started.body).toEqual({ childId: expect.any(String), messageId: expect.any(String) });
    expect(started.status).toBe(202);
    const { childId, messageId } = started.body;
    expect(messageId).toMatch(/^msg_/);
    await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    const again = await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/messages`, {
      body: { content: "second" },
    });
    expect(again.status).toBe(202);
    const events = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "subagent/end").length === 2,
    );
    const starts = events.filter((e) => e.type === "subagent/start");
    const ends = events.filter((e) => e.type === "subagent/end");
    expect(starts).toHaveLength(2);
    expect(starts[0]!.data.runId).not.toBe(starts[1]!.data.runId);
    expect(ends.map((e) => e.data.runId)).toEqual(starts.map((e) => e.data.runId));
    expect(ends.map((e) => e.data.lastAssistantMessage[0].text)).toEqual(["echo: first", "echo: second"]);
    const childLog = await waitForEvents(
      childId,
      (es) => es.filter((e) => e.type === "turn/end").length === 2,
    );
    expect(childLog.filter((e) => e.type === "subagent/descriptor")).toHaveLength(1);
    const descriptorAt = childLog.findIndex((e) => e.type === "subagent/descriptor");
    expect(descriptorAt).toBeLessThan(childLog.findIndex((e) => e.type === "turn/start"));
    expect(childLog.find((e) => e.type === "subagent/descriptor")!.data).toEqual({
      version: 2,
      mode: "continuable",
      provider: "spawn",
      label: "helper",
      agentModel: "scripted",
    });
  });

  it("a continuable start answers 202 {childId, messageId} at inbox acceptance: the id is the child's agent/inbox/inserted id, the prompt is not yet logged and no model call was made", async () => {
    const parent = await createSession();
    const reserved = crypto.randomUUID();
    const childId = reservedId(parent.id, reserved);
    const gate = hold(childId, "before-drive");
    try {
      const res = await startContinuable(parent.id, {
        prompt: "hello there",
        label: "greeter",
        childId: reserved,
      });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ childId, messageId: expect.stringMatching(/^msg_/) });
      const { messageId } = res.body;
      await gate.reached;

      const atAcceptance = await allEvents(childId);
      expect(ofType(atAcceptance, "agent/inbox/inserted").map((e) => e.data)).toEqual([
        { messageId, lane: "next-turn", waking: true, source: { kind: "user" } },
      ]);
      expect(ofType(atAcceptance, "user/message")).toEqual([]);
      expect(ofType(atAcceptance, "agent/inbox/claimed")).toEqual([]);
      expect(ofType(atAcceptance, "turn/start")).toEqual([]);
      expect(ofType(atAcceptance, "assistant/message")).toEqual([]);
      expect(gate.count("before-model")).toBe(0);
      // the parent already published the epoch (subagent/start) when it answered
      expect(startsFor(await allEvents(parent.id), childId).map((e) => e.data)).toEqual([
        { runId: expect.any(String), provider: "spawn", id: childId, local: true },
      ]);

      gate.release();
      const log = await waitForEvents(childId, (l) => count(l, "turn/end") === 1);
      const user = ofType(log, "user/message");
      expect(user.map((e) => [e.data.messageId, textOf(e.data.content)])).toEqual([
        [messageId, "hello there"],
      ]);
      const inserted = ofType(log, "agent/inbox/inserted")[0]!;
      const claimed = ofType(log, "agent/inbox/claimed")[0]!;
      expect(claimed.data.messageId).toBe(messageId);
      expect(inserted.seq).toBeLessThan(claimed.seq);
      expect(claimed.seq).toBeLessThan(user[0]!.seq);
      expect(gate.count("before-model")).toBe(1);
      expect(assistantTexts(log)).toEqual(["echo: hello there"]);
    } finally {
      gate.remove();
    }
  });

  it("a continuable start on a provider that cannot continue (remote) answers 422 UNSUPPORTED_CAPABILITY 'does not support continuable children' and leaves no child, no run, no epoch and no subagent/start", async () => {
    const name = uniqueName("remote");
    const put = await api("PUT", `/v1/providers/${name}`, {
      body: { kind: "remote", url: "https://remote.example.invalid" },
    });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ name, continuable: false });
    try {
      const parent = await createSession();
      const childId = crypto.randomUUID();
      const res = await startContinuable(parent.id, { provider: name, prompt: "x", childId });
      expectError(res, 422, "UNSUPPORTED_CAPABILITY", /does not support continuable children/);
      expect(res.body).not.toHaveProperty("childId");
      expect((await api("GET", `/v1/sessions/${reservedId(parent.id, childId)}`)).status).toBe(404);
      expect(await childRows(parent.id)).toEqual([]);
      expect(await sqlRows(parent.id, "SELECT run_id FROM runs")).toEqual([]);
      expect(await sqlRows(parent.id, "SELECT run_id FROM epochs")).toEqual([]);
      expect(ofType(await allEvents(parent.id), "subagent/start")).toEqual([]);
      expect((await api("GET", `/v1/sessions/${parent.id}/children`)).body.entries).toEqual([]);
      // the same parent can still start a continuable child on a provider that supports it
      const ok = await startContinuable(parent.id, { prompt: "y", childId });
      expect(ok.status).toBe(202);
      expect(ok.body.childId).toBe(reservedId(parent.id, childId));
    } finally {
      await api("DELETE", `/v1/providers/${name}`);
    }
  });

  it("a continuable start or follow-up for a parent that was never created answers 404 NOT_FOUND and creates neither the parent nor the child", async () => {
    const ghost = crypto.randomUUID();
    const childId = crypto.randomUUID();
    const start = await startContinuable(ghost, { prompt: "x", childId });
    expectError(start, 404, "NOT_FOUND");
    const more = await followup(ghost, childId, "more");
    expectError(more, 404, "NOT_FOUND");
    expect((await api("GET", `/v1/sessions/${ghost}`)).status).toBe(404);
    expect((await api("GET", `/v1/sessions/${reservedId(ghost, childId)}`)).status).toBe(404);
  });

  it("a caller-reserved childId names a child in its parent's namespace: that parent reserving it again while the child is live or after it settled answers 409 DUPLICATE_CHILD; another parent reserving it gets its own child; reserving an existing top-level session's id makes a distinct child and leaves that session untouched", async () => {
    const parent = await createSession();
    const other = await createSession();
    const childId = crypto.randomUUID();
    const first = await startChild(parent.id, {
      prompt: script({ think: 1500 }, { say: "kept" }),
      childId,
    });
    // the child's id is derived from the parent and the childId, never the childId itself
    expect(first.childId).not.toBe(childId);
    const placed = reservedId(parent.id, childId);
    expect(first.childId).toBe(placed);
    expect(await view(placed)).toMatchObject({
      id: placed,
      parentSession: parent.id,
      origin: "subagent",
      mode: "continuable",
    });
    expect((await api("GET", `/v1/sessions/${childId}`)).status).toBe(404);

    // the same parent: the id is taken, whatever the request
    expectError(await startContinuable(parent.id, { prompt: "again", childId }), 409, "DUPLICATE_CHILD");
    // another parent: its own child under the same childId
    const theirs = await startContinuable(other.id, { prompt: "mine", childId });
    expect(theirs.status).toBe(202);
    expect(theirs.body.childId).toBe(reservedId(other.id, childId));
    expect(theirs.body.childId).not.toBe(placed);
    expect(await view(theirs.body.childId)).toMatchObject({ parentSession: other.id });
    // an existing top-level session's id: a distinct child of this parent; that session is untouched
    const otherBefore = await allEvents(other.id);
    const overRoot = await startContinuable(parent.id, { prompt: "over a root", childId: other.id });
    expect(overRoot.status).toBe(202);
    expect(overRoot.body.childId).toBe(reservedId(parent.id, other.id));
    expect(overRoot.body.childId).not.toBe(other.id);
    expect(await view(overRoot.body.childId)).toMatchObject({ parentSession: parent.id });
    expect(await view(other.id)).toMatchObject({ parentSession: null, origin: null });
    expect(ofType(await allEvents(other.id), "subagent/start")).toEqual(
      ofType(otherBefore, "subagent/start"),
    );

    await settledTimes(parent.id, placed);
    expectError(await startContinuable(parent.id, { prompt: "late", childId }), 409, "DUPLICATE_CHILD");
    expectError(
      await api("POST", `/v1/sessions/${parent.id}/subagents`, {
        body: { provider: "spawn", mode: "one-shot", prompt: "late", childId },
      }),
      409,
      "DUPLICATE_CHILD",
    );

    const log = await allEvents(placed);
    expect(count(log, "subagent/descriptor")).toBe(1);
    expect(userTexts(log)).toEqual([script({ think: 1500 }, { say: "kept" })]);
    expect(await view(placed)).toMatchObject({ parentSession: parent.id });
    expect(await childRows(parent.id)).toEqual(
      expect.arrayContaining([
        { child_id: placed, mode: "continuable", state: "released", provider: "spawn" },
        {
          child_id: overRoot.body.childId,
          mode: "continuable",
          state: expect.any(String),
          provider: "spawn",
        },
      ]),
    );
    expect(await childRows(parent.id)).toHaveLength(2);
    expect((await childRows(other.id)).map((r) => r.child_id)).toEqual([theirs.body.childId]);
  });

  it("the child log holds exactly one continuable descriptor before its first turn: label, agentModel (the request's, else the parent's), persona and toolFilter only when requested, nothing else", async () => {
    const parent = await createSession({ model: "openai:fake-model" });
    const plain = await startChild(parent.id, { prompt: "plain child", label: "plain" });
    const decorated = await startChild(parent.id, {
      prompt: "decorated child",
      label: "decorated",
      model: "scripted",
      persona: "Answer in one word.",
      toolFilter: { deny: ["list_agents"] },
    });
    const plainLog = await waitForEvents(plain.childId, (l) => count(l, "turn/end") === 1);
    const decoratedLog = await waitForEvents(decorated.childId, (l) => count(l, "turn/end") === 1);

    expect(descriptorOf(plainLog)).toStrictEqual({
      version: 2,
      mode: "continuable",
      provider: "spawn",
      label: "plain",
      agentModel: "openai:fake-model",
    });
    expect(descriptorOf(decoratedLog)).toStrictEqual({
      version: 2,
      mode: "continuable",
      provider: "spawn",
      label: "decorated",
      agentModel: "scripted",
      persona: "Answer in one word.",
      toolFilter: { deny: ["list_agents"] },
    });
    // the route each descriptor names is the one each child ran on
    expect(ofType(plainLog, "assistant/message").map((e) => e.data.model)).toEqual(["openai:fake-model"]);
    expect(assistantTexts(plainLog)).toEqual(["hello from fake: plain child"]);
    expect(ofType(decoratedLog, "assistant/message").map((e) => e.data.model)).toEqual(["scripted"]);
  });

  it("a start that fails inside the creation window (the child's init refuses it) leaves the parent without a child row, epoch, run, subagent/start or queued turn, and leaves the existing session untouched", async () => {
    const owner = await createSession();
    const parent = await createSession();
    const childId = crypto.randomUUID();
    // a session of another parent already on the id this parent's start would place its child on
    const taken = reservedId(parent.id, childId);
    await occupy(taken, owner.id, script({ think: 1000 }, { say: "owner's" }));

    const refused = await startContinuable(parent.id, { prompt: "intruder", childId });
    expectError(refused, 409, "DUPLICATE_CHILD");

    expect(await childRows(parent.id)).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT run_id FROM epochs")).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT run_id FROM runs")).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT message_id FROM inbox")).toEqual([]);
    expect(await allEvents(parent.id)).toEqual([]);
    expect(await view(parent.id)).toMatchObject({ parentSession: null, origin: null, status: "idle" });

    const childLog = await waitForEvents(taken, (l) => count(l, "turn/end") === 1);
    expect(count(childLog, "agent/inbox/inserted")).toBe(1);
    expect(userTexts(childLog)).toEqual([script({ think: 1000 }, { say: "owner's" })]);
    expect(await view(taken)).toMatchObject({ parentSession: owner.id });
  });
});

/**
 * A start with a caller-reserved `childId` is keyed by its request: the same request again is a
 * retry (after a 503, or after an answer the caller never saw) and gets the same child; a
 * different request for the id is `DUPLICATE_CHILD`.
 */
describe("a retried continuable start with a caller-reserved child id (semantics.md §10.5)", () => {
  afterEach(() => removeAllFaults());

  it("after a 503 (every init attempt failed before it committed), the same request creates the child once", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const placed = reservedId(parent.id, childId);
    // the start's own retries (three attempts) all fail
    const plan = faults(placed, (point, n) => (point === "in-init" && n <= 3 ? "throw" : undefined));
    const body = { prompt: "retried start", childId, label: "retry" };

    const first = await startContinuable(parent.id, body);
    expect(first.status).toBe(503);
    expect(first.body.error.code).toBe("OVERLOADED");
    expect(first.headers.get("retry-after")).toBe("1");
    expect(await sqlRows(parent.id, "SELECT child_id FROM children")).toEqual([]);

    const other = await startContinuable(parent.id, { ...body, prompt: "another request" });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("DUPLICATE_CHILD");

    const retried = await startContinuable(parent.id, { label: "retry", childId, prompt: "retried start" });
    expect(retried.status).toBe(202);
    expect(retried.body.childId).toBe(placed);
    expect(plan.count("in-init")).toBe(4);
    const log = await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);
    expect(count(log, "subagent/start")).toBe(1);
    const childLog = await waitForEvents(placed, (es) => count(es, "turn/end") === 1);
    expect(count(childLog, "turn/start")).toBe(1);
  });

  it("a retry of a start that went through answers the same child and message, and starts nothing", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const body = { prompt: "answered once", childId };
    const first = await startContinuable(parent.id, body);
    expect(first.status).toBe(202);
    await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);

    const again = await startContinuable(parent.id, body);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(first.body.childId).toBe(reservedId(parent.id, childId));
    const differs = await startContinuable(parent.id, { ...body, label: "other" });
    expect(differs.status).toBe(409);
    expect(differs.body.error.code).toBe("DUPLICATE_CHILD");

    const log = await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);
    expect(count(log, "subagent/start")).toBe(1);
    const [row] = await sqlRows<{ state: string }>(
      parent.id,
      "SELECT state FROM children WHERE child_id = ?",
      first.body.childId,
    );
    expect(row?.state).toBe("released"); // the retry did not take ownership again
  });
});
