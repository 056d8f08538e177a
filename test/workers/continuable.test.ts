import { describe, expect, it } from "vitest";
import { api, createSession } from "../support/api";
import { assistantTexts, sleep, toolResults, waitForEvents } from "../support/logs";
import { script } from "../support/scripts";

describe("continuable children", () => {
  it("plays the api.md example: a background child reports, finishes, and the parent gets one notice", async () => {
    const parent = await createSession();
    const example = {
      script: [
        {
          call: [
            {
              tool: "subagent",
              args: {
                description: "count",
                run_in_background: true,
                prompt: script({ call: [{ tool: "report", args: { output: "half way" } }] }, { say: "42" }),
              },
            },
          ],
        },
        { say: "started" },
      ],
    };
    await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content: JSON.stringify(example) } });
    const events = await waitForEvents(
      parent.id,
      (es) =>
        es.some((e) => e.type === "subagent/end") && es.filter((e) => e.type === "turn/end").length >= 2,
    );
    const users = events.filter((e) => e.type === "user/message");
    const report = users.find((e) => e.data.source.kind === "subagent-report");
    const notice = users.find((e) => e.data.source.kind === "subagent-settled");
    const childId = events.find((e) => e.type === "subagent/start")!.data.id;
    expect(report!.data.content[0].text).toBe(`Background subagent ${childId} reported:\nhalf way`);
    expect(notice!.data.content[0].text).toBe(
      `Background subagent ${childId} finished and will do no further work unless you send it more.\nIts closing message:\n42`,
    );
    expect(notice!.data.source.summary).toBe(
      `Background subagent ${childId} finished and will do no further work unless you send it more.`,
    );
    expect(events.filter((e) => e.type === "subagent/start")).toHaveLength(1);
    expect(events.filter((e) => e.type === "subagent/end")).toHaveLength(1);
    expect(toolResults(events)[0]!.text).toBe(`started subagent ${childId}`);
    const child = await api("GET", `/v1/sessions/${childId}`);
    expect(child.body).toMatchObject({
      mode: "continuable",
      label: "count",
      parentSession: parent.id,
      status: "idle",
    });
  });

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

  it("refuses a reused child id, a one-shot child's follow-up and a stranger's follow-up", async () => {
    const parent = await createSession();
    const other = await createSession();
    const childId = crypto.randomUUID();
    const first = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "x", mode: "continuable", label: "a", childId },
    });
    expect(first.status).toBe(202);
    // the same request again would be a retry (continuable-start-retry.test.ts); another one is refused
    const dup = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "another prompt", mode: "continuable", label: "a", childId },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("DUPLICATE_CHILD");
    const stranger = await api("POST", `/v1/sessions/${other.id}/subagents/${childId}/messages`, {
      body: { content: "hey" },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.body.error.code).toBe("UNAUTHORIZED");
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

  it("interrupt parks queued follow-ups until the next message, which runs them first", async () => {
    const parent = await createSession();
    const started = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: {
        provider: "spawn",
        prompt: script({ think: 10_000 }, { say: "slow" }),
        mode: "continuable",
        label: "slow",
      },
    });
    const { childId } = started.body;
    await waitForEvents(childId, (es) => es.some((e) => e.type === "turn/start"));
    await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/messages`, {
      body: { content: "one" },
    });
    await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/messages`, {
      body: { content: "two" },
    });
    const interrupted = await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/interrupt`);
    expect(interrupted.status).toBe(202);
    await waitForEvents(childId, (es) => es.some((e) => e.type === "turn/end"));
    await sleep(200);
    const parked = await waitForEvents(childId, () => true);
    expect(parked.filter((e) => e.type === "turn/start")).toHaveLength(1);
    await api("POST", `/v1/sessions/${parent.id}/subagents/${childId}/messages`, {
      body: { content: "three" },
    });
    const events = await waitForEvents(childId, (es) => es.filter((e) => e.type === "turn/end").length === 4);
    expect(events.filter((e) => e.type === "turn/end").map((e) => e.data.reason)).toEqual([
      "aborted",
      "completed",
      "completed",
      "completed",
    ]);
    expect(assistantTexts(events)).toEqual(["echo: one", "echo: two", "echo: three"]);
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
