import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, createSession, startChild, startOneShot } from "../../support/api";
import {
  allEvents,
  count,
  endsFor,
  insertedOf,
  messagesOf,
  quiet,
  runScript,
  settledTimes,
  startedChildId,
  textOf,
  toolResults,
  waitForEvents,
} from "../../support/logs";
import { evict, sqlRows, stub } from "../../support/objects";
import { aCallSpan } from "../../support/trace";
import { LONG_TURN, script, toolCall } from "../../support/scripts";

/**
 * The model's control tools `list_agents` (semantics.md §9.4) and `send_message` (§6.3), driven by
 * the scripted model inside sessions over the HTTP API.
 */

describe("list_agents and send_message (semantics.md §9.4, §6.3)", () => {
  it("list_agents renders '(no subagents)' when empty, hides one-shot children, shows [ready] / [running] / [idle] and [diagnostic: corrupt], and adds parent=<id> depth=<n> in descendants scope", async () => {
    const empty = await createSession();
    const emptyLog = await runScript(
      empty.id,
      { call: [toolCall("list_agents"), toolCall("list_agents", { scope: "descendants" })] },
      { say: "ok" },
    );
    expect(toolResults(emptyLog, "list_agents").map((r) => [r.text, r.isError])).toEqual([
      ["(no subagents)", false],
      ["(no subagents)", false],
    ]);

    const root = await createSession();
    const oneShot = await startOneShot(root.id, { prompt: "hidden", label: "one-shot" });
    const ready = await startChild(root.id, { prompt: "quick", label: "ready one" });
    const running = await startChild(root.id, { prompt: LONG_TURN, label: "running one" });
    const waiting = await startChild(root.id, {
      prompt: script(
        { call: [toolCall("subagent", { description: "leaf", prompt: LONG_TURN, run_in_background: true })] },
        { say: "w" },
      ),
      label: "waiting one",
    });
    const broken = await startChild(root.id, { prompt: "to be corrupted", label: "broken" });
    await settledTimes(root.id, ready.childId);
    await settledTimes(root.id, broken.childId);
    await waitForEvents(root.id, (l) => endsFor(l, oneShot.id).length === 1);
    const waitingLog = await waitForEvents(waiting.childId, (l) => count(l, "turn/end") === 1);
    const leaf = startedChildId(waitingLog);
    await waitForEvents(running.childId, (l) => count(l, "turn/start") === 1);
    await waitForEvents(leaf, (l) => count(l, "turn/start") === 1);
    // a settled child whose log ends in a malformed descriptor lists as a diagnostic
    await runInDurableObject(stub(broken.childId), (_instance: unknown, state: DurableObjectState) => {
      const seq = state.storage.sql.exec<{ n: number }>("SELECT max(seq) + 1 AS n FROM events").one().n;
      state.storage.sql.exec(
        "INSERT INTO events (seq, type, at, data) VALUES (?, 'subagent/descriptor', ?, ?)",
        seq,
        Date.now(),
        JSON.stringify({ version: 2, mode: "continuable" }),
      );
    });
    await evict(broken.childId); // written behind the log: the next instance reads it
    await quiet(root.id);

    const log = await runScript(
      root.id,
      { call: [toolCall("list_agents")] },
      { call: [toolCall("list_agents", { scope: "descendants" })] },
      { say: "listed" },
    );
    const [children, descendants] = toolResults(log, "list_agents").map((r) => r.text);
    const order = (
      await sqlRows<{ child_id: string }>(
        root.id,
        "SELECT child_id FROM children ORDER BY created_at, child_id",
      )
    ).map((r) => r.child_id);
    const line: Record<string, (place: string) => string> = {
      [ready.childId]: (p) => `${ready.childId} [ready]${p} — ready one`,
      [running.childId]: (p) => `${running.childId} [running]${p} — running one`,
      [waiting.childId]: (p) => `${waiting.childId} [idle]${p} — waiting one`,
      [broken.childId]: (p) => `${broken.childId} [diagnostic: corrupt]${p}`,
    };
    const direct = order.filter((id) => id !== oneShot.id);
    expect(children).toBe(direct.map((id) => line[id]!("")).join("\n"));
    expect(descendants).toBe(
      direct
        .flatMap((id) => {
          const own = line[id]!(` parent=${root.id} depth=1`);
          return id === waiting.childId
            ? [own, `${leaf} [running] parent=${waiting.childId} depth=2 — leaf`]
            : [own];
        })
        .join("\n"),
    );
    expect(children).not.toContain(oneShot.id);
    expect(descendants).not.toContain(oneShot.id);
    await api("POST", `/v1/sessions/${root.id}/subagents/drain`, { body: {} });
  });

  it("send_message delivers as {kind:'coordinator', form:'relay', senderSessionId: caller} and renders 'message queued as the next turn for subagent <id>'; an unknown id and a non-parent get isError results", async () => {
    const root = await createSession();
    const stranger = await createSession();
    const { childId } = await startChild(root.id, { prompt: "first" });
    await settledTimes(root.id, childId);
    await waitForEvents(root.id, (l) => count(l, "turn/end") === 1);

    const unknown = crypto.randomUUID();
    const log = await runScript(
      root.id,
      {
        call: [
          toolCall("send_message", { subagent_id: childId, message: "via the tool" }),
          toolCall("send_message", { subagent_id: unknown, message: "lost" }),
        ],
      },
      { say: "sent" },
    );
    const [delivered, lost] = toolResults(log, "send_message");
    expect(delivered).toMatchObject({
      text: `message queued as the next turn for subagent ${childId}`,
      isError: false,
    });
    expect(lost!.isError).toBe(true);
    expect(lost!.text).toMatch(/^Error: .*unavailable/);
    expect((await api("GET", `/v1/sessions/${unknown}`)).status).toBe(404);

    await settledTimes(root.id, childId, 2);
    const childLog = await allEvents(childId);
    expect(insertedOf(childLog, "coordinator").map((e) => e.data.source)).toEqual([
      {
        kind: "coordinator",
        form: "relay",
        senderSessionId: root.id,
        // the span of the send_message call: the turn it starts joins the sender's trace under it
        trace: aCallSpan(),
      },
    ]);
    expect(messagesOf(childLog, "coordinator").map((e) => textOf(e.data.content))).toEqual(["via the tool"]);

    const strangerLog = await runScript(
      stranger.id,
      { call: [toolCall("send_message", { subagent_id: childId, message: "not yours" })] },
      { say: "tried" },
    );
    const [refused] = toolResults(strangerLog, "send_message");
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toMatch(/belongs to another parent session/);
    expect(count(await allEvents(childId), "agent/inbox/inserted")).toBe(2);
  });
});
