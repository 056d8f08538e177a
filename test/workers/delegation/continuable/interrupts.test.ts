import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  followupOk,
  interruptChild,
  sendMessage,
  startChild,
  startOneShot,
} from "../../../support/api";
import {
  allEvents,
  assistantTexts,
  count,
  endsFor,
  ofType,
  quiet,
  settledTimes,
  sleep,
  startsFor,
  toolResults,
  turnEndCauses,
  turnReasons,
  waitForEvents,
} from "../../../support/logs";
import { activationOf } from "../../../support/objects";
import { LONG_TURN, script } from "../../../support/scripts";
import { forest } from "../../../support/trees";

/**
 * Interrupting a continuable child (semantics.md §6.4) and who may (§7.2): an interrupt ends only
 * the current turn, queued follow-ups stay parked until the next one, and the `interrupt_agent`
 * tool reaches any descendant but never a sibling, a stranger or the caller itself.
 */

describe("interrupting a continuable child (semantics.md §6.4, §7.2)", () => {
  it("the parent's interrupt ends the current turn aborted (cause parent) once; two queued follow-ups stay parked with no model call; a later follow-up runs them first: [aborted, completed, completed, completed] in one epoch", async () => {
    const root = await createSession();
    const { childId, messageId } = await startChild(root.id, { prompt: LONG_TURN });
    await waitForEvents(childId, (l) => count(l, "turn/start") === 1);
    const one = await followupOk(root.id, childId, "one");
    const two = await followupOk(root.id, childId, "two");

    const res = await interruptChild(root.id, childId);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: true });
    await waitForEvents(childId, (l) => count(l, "turn/end") === 1);
    expect((await interruptChild(root.id, childId)).status).toBe(202);
    const parked = await quiet(childId, 400);
    expect(turnEndCauses(parked)).toEqual([{ reason: "aborted", cause: "parent" }]);
    expect(count(parked, "turn/start")).toBe(1);
    expect(count(parked, "assistant/message")).toBe(0);
    expect(ofType(parked, "agent/inbox/claimed").map((e) => e.data.messageId)).toEqual([messageId]);
    expect(await activationOf(childId)).toHaveLength(1);
    expect(endsFor(await allEvents(root.id), childId)).toEqual([]);

    const three = await followupOk(root.id, childId, "three");
    await settledTimes(root.id, childId);
    const log = await allEvents(childId);
    expect(turnReasons(log)).toEqual(["aborted", "completed", "completed", "completed"]);
    expect(ofType(log, "agent/inbox/claimed").map((e) => e.data.messageId)).toEqual([
      messageId,
      one,
      two,
      three,
    ]);
    expect(assistantTexts(log)).toEqual(["echo: one", "echo: two", "echo: three"]);
    const rootLog = await allEvents(root.id);
    expect(startsFor(rootLog, childId)).toHaveLength(1);
    expect(endsFor(rootLog, childId)[0]!.data).toMatchObject({ stopReason: "completed" });
  });

  it("interrupt authority: the parent's interrupt spares a resident grandchild; an ancestor's interrupt_agent stops the grandchild (cause parent); self, sibling and stranger are refused without cancelling; unknown, one-shot, settled and already-stopped targets are accepted no-ops", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const { mid, leaf } = await forest(root.id);
    const oneShot = await startOneShot(root.id, {
      prompt: script({ think: 1500 }, { say: "one-shot done" }),
    });
    const { childId: done } = await startChild(root.id, { prompt: "quick", label: "done" });
    await settledTimes(root.id, done);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === 1);

    // refused: a stranger (HTTP and tool), the root over HTTP for its grandchild, a sibling, the root itself
    expectError(await interruptChild(stranger.id, mid), 403, "UNAUTHORIZED");
    expectError(await interruptChild(root.id, leaf), 403, "UNAUTHORIZED");
    await sendMessage(
      stranger.id,
      script({ call: [{ tool: "interrupt_agent", args: { agent_id: mid } }] }, { say: "s" }),
    );
    const strangerLog = await waitForEvents(
      stranger.id,
      (l) => toolResults(l, "interrupt_agent").length === 1,
    );
    expect(toolResults(strangerLog, "interrupt_agent")[0]).toMatchObject({ isError: true });
    expect(toolResults(strangerLog, "interrupt_agent")[0]!.text).toMatch(/not a live descendant/);
    const { childId: sibling } = await startChild(root.id, {
      prompt: script({ call: [{ tool: "interrupt_agent", args: { agent_id: mid } }] }, { say: "tried" }),
      label: "sibling",
    });
    const siblingLog = await waitForEvents(sibling, (l) => toolResults(l, "interrupt_agent").length === 1);
    expect(toolResults(siblingLog, "interrupt_agent")[0]).toMatchObject({ isError: true });
    expect(toolResults(siblingLog, "interrupt_agent")[0]!.text).toMatch(/not a live descendant/);
    await settledTimes(root.id, sibling);
    await quiet(root.id);

    const unknown = crypto.randomUUID();
    const before = count(await allEvents(root.id), "turn/end");
    await sendMessage(
      root.id,
      script(
        {
          call: [
            { tool: "interrupt_agent", args: { agent_id: root.id } },
            { tool: "interrupt_agent", args: { agent_id: unknown } },
            { tool: "interrupt_agent", args: { agent_id: oneShot.id } },
            { tool: "interrupt_agent", args: { agent_id: done } },
          ],
        },
        { say: "asked" },
      ),
    );
    let rootLog = await waitForEvents(root.id, (l) => toolResults(l, "interrupt_agent").length === 4);
    expect(toolResults(rootLog, "interrupt_agent").map((r) => [r.text, r.isError])).toEqual([
      ["Error: an agent cannot interrupt itself", true],
      [`interrupt requested for agent ${unknown}`, false],
      [`interrupt requested for agent ${oneShot.id}`, false],
      [`interrupt requested for agent ${done}`, false],
    ]);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === before + 1);
    expect(turnReasons(await allEvents(root.id)).at(-1)).toBe("completed");
    expect((await api("GET", `/v1/sessions/${unknown}`)).status).toBe(404);
    const oneShotLog = await waitForEvents(oneShot.id, (l) => count(l, "turn/end") === 1);
    expect(turnReasons(oneShotLog)).toEqual(["completed"]);
    expect(assistantTexts(oneShotLog)).toEqual(["one-shot done"]);
    expect(count(await allEvents(done), "turn/start")).toBe(1);
    expect(startsFor(await allEvents(root.id), done)).toHaveLength(1);
    // nothing refused above cancelled anything
    expect(ofType(await allEvents(mid), "turn/end")).toEqual([]);
    expect(ofType(await allEvents(leaf), "turn/end")).toEqual([]);

    // the direct parent's interrupt stops the child only
    expect((await interruptChild(root.id, mid)).status).toBe(202);
    await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    expect(turnEndCauses(await allEvents(mid))).toEqual([{ reason: "aborted", cause: "parent" }]);
    await sleep(300);
    expect(ofType(await allEvents(leaf), "turn/end")).toEqual([]);
    expect(await activationOf(leaf)).toHaveLength(1);

    // a deep ancestor stops the grandchild with the parent cause; a second stop is a no-op
    await sendMessage(
      root.id,
      script(
        { call: [{ tool: "interrupt_agent", args: { agent_id: leaf } }] },
        { call: [{ tool: "interrupt_agent", args: { agent_id: leaf } }] },
        { say: "stopped" },
      ),
    );
    rootLog = await waitForEvents(root.id, (l) => toolResults(l, "interrupt_agent").length === 6);
    expect(
      toolResults(rootLog, "interrupt_agent")
        .slice(4)
        .map((r) => [r.text, r.isError]),
    ).toEqual([
      [`interrupt requested for agent ${leaf}`, false],
      [`interrupt requested for agent ${leaf}`, false],
    ]);
    await settledTimes(mid, leaf);
    expect(turnEndCauses(await quiet(leaf))).toEqual([{ reason: "aborted", cause: "parent" }]);
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
});
