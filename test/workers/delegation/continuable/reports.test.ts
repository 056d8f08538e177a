import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage, startChild, startOneShot } from "../../../support/api";
import { fakeRequestsMentioning, toolNames } from "../../../support/fake-openai";
import {
  allEvents,
  count,
  endsFor,
  insertedOf,
  messagesOf,
  ofType,
  quiet,
  settledTimes,
  sleep,
  startedChildId,
  textOf,
  toolResults,
  waitForEvents,
} from "../../../support/logs";
import { inboxOf } from "../../../support/objects";
import { aCallSpan } from "../../../support/trace";
import { script, spawnCall, toolCall } from "../../../support/scripts";

/**
 * Reports from a continuable child to its parent (semantics.md §6.5): the `report` tool exists only
 * in continuable children, survives any tool filter, goes exactly one edge up, and takes the lane
 * the child's `reportDelivery` picks. Tool lists are read from the fake OpenAI-compatible server's
 * recorded requests.
 */

/** The tool lists of the fake server's requests that mention `marker`. */
async function toolListsMentioning(marker: string): Promise<string[][]> {
  return (await fakeRequestsMentioning(marker)).map(toolNames);
}

describe("reports (semantics.md §6.5)", () => {
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

  it("quiet reports enter the parent's pending context without a turn; next-step reports wake an idle parent; wakeup reports are their own turn; a busy parent takes repeated reports in acceptance order before a later notice in one batch", async () => {
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
        source: { kind: "subagent-report", form: "relay", senderSessionId: q.childId, trace: aCallSpan() },
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

  it("report exists only for continuable children and travels exactly one edge up: a root or a one-shot child calling it gets an error result; a grandchild's report reaches only its own parent", async () => {
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
      { kind: "subagent-report", form: "relay", senderSessionId: leaf, trace: aCallSpan() },
    ]);
    const rootLog = await quiet(root.id);
    expect(insertedOf(rootLog, "subagent-report")).toEqual([]);
    expect((await inboxOf(root.id)).filter((m) => m.text.includes("leaf news"))).toEqual([]);
    expect(toolResults(await allEvents(leaf), "report")[0]!.isError).toBe(false);
  });

  it("report is offered only inside continuable children, survives toolFilter {allow: []}, and is absent for roots and one-shot children", async () => {
    const marker = crypto.randomUUID().slice(0, 8);
    const root = await createSession({ model: "openai:fake-model" });
    await sendMessage(root.id, `root ${marker}`);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === 1);

    const open = await startChild(root.id, { prompt: `open ${marker}`, label: "open" });
    const closed = await startChild(root.id, {
      prompt: `closed ${marker}`,
      label: "closed",
      toolFilter: { allow: [] },
    });
    const oneShot = await startOneShot(root.id, { prompt: `one-shot ${marker}` });
    await settledTimes(root.id, open.childId);
    await settledTimes(root.id, closed.childId);
    await waitForEvents(root.id, (l) => endsFor(l, oneShot.id).length === 1);

    const [rootTools] = await toolListsMentioning(`root ${marker}`);
    const [openTools] = await toolListsMentioning(`open ${marker}`);
    const [closedTools] = await toolListsMentioning(`closed ${marker}`);
    const [oneShotTools] = await toolListsMentioning(`one-shot ${marker}`);
    expect(rootTools).not.toContain("report");
    expect(rootTools).toContain("send_message");
    expect(oneShotTools).not.toContain("report");
    expect(openTools).toContain("report");
    expect(openTools).toContain("send_message");
    expect(closedTools).toEqual(["report"]);

    // and it works there: a filtered child reports, while its other tools are gone
    const scripted = await createSession();
    const { childId } = await startChild(scripted.id, {
      prompt: script(
        { call: [toolCall("report", { output: "still here" }), toolCall("list_agents")] },
        { say: "done" },
      ),
      toolFilter: { allow: [] },
    });
    await settledTimes(scripted.id, childId);
    const childLog = await allEvents(childId);
    expect(toolResults(childLog).map((r) => [r.name, r.isError])).toEqual([
      ["report", false],
      ["list_agents", true],
    ]);
    expect(insertedOf(await allEvents(scripted.id), "subagent-report")).toHaveLength(1);
  });
});
