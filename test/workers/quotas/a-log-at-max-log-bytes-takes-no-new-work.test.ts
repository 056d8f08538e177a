import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  followup,
  interruptChild,
  rpc,
  rpcFailure,
  startChild,
  startContinuable,
  startRun,
} from "../../support/api";
import { reservedId } from "../../support/ids";
import { count, eventually, startedChildId, type WireEvent, waitForEvents } from "../../support/logs";
import { evict, quiesce, registryStub, sqlRows, stub, tablesOf } from "../../support/objects";
import { expectRefused, fillLog, logBytes, MAX_LOG_BYTES, stateOf } from "../../support/quotas";
import { script, spawnCall, toolCall } from "../../support/scripts";
import { jsonRpcAnswer, mcpPath, postJsonRpc } from "../../support/json-rpc";

/**
 * The log quota (src/core/quotas.ts, store/event-log.ts): once a session's log holds
 * MAX_LOG_BYTES (256 MiB in wrangler.toml) bytes of event data, it takes no new work: messages,
 * follow-ups (to it or from it) and starts are `422 QUOTA_EXCEEDED`, storing nothing, and a turn
 * under way ends at its next step as `error`. What its children deliver is still applied: a
 * parent must learn how its children end.
 */

const QUOTA = /log holds \d+ bytes, at or past its quota of 268435456 \(MAX_LOG_BYTES\)/;

/** The events of a session after `seq` (its log is too big to read whole). */
async function eventsAfter(id: string, seq: number): Promise<WireEvent[]> {
  const res = await api("GET", `/v1/sessions/${id}/events?after=${seq}&limit=500`);
  expect(res.status).toBe(200);
  return res.body.events;
}

describe("a session whose log reaches MAX_LOG_BYTES", () => {
  it("ends its turn at the next step, refuses new work on every face with 422 QUOTA_EXCEEDED storing nothing, and still applies its child's end", async () => {
    const top = await createSession({ label: "log-quota-top" });
    // `mid`: a continuable child that starts a long-running child (`leaf`), its epoch waiting for it
    const { childId: mid } = await startChild(top.id, {
      prompt: script(
        { call: [spawnCall("leaf", script({ think: 60_000 }, { say: "never" }))] },
        { say: "spawned" },
      ),
    });
    const midLog = await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    const leaf = startedChildId(midLog);
    await waitForEvents(leaf, (l) => count(l, "turn/start") === 1);
    await quiesce([top.id, mid]);

    // 60000 bytes below the quota: the next follow-up (38000 bytes of text, not all ASCII) is
    // taken, its turn's first step runs, and its answer (the same again) crosses the quota
    const filled = await fillLog(mid, 60_000);
    await evict(mid);
    expect(await logBytes(mid)).toBe(MAX_LOG_BYTES - 60_000);
    const echoed = "é漢😀".repeat(2_000) + "x".repeat(20_000);
    const taken = await followup(
      top.id,
      mid,
      script({ call: [toolCall("echo", { text: echoed })] }, { say: "never said" }),
    );
    expect(taken.status, JSON.stringify(taken.body)).toBe(202);
    const turn = await eventually(
      () => eventsAfter(mid, filled),
      (es) => count(es, "turn/end") === 1,
      { what: "the turn's end" },
    );
    // the step that crossed the quota appended its answer and its tool ran; the next one did not
    expect(turn.filter((e) => e.type === "assistant/message")).toHaveLength(1);
    expect(turn.filter((e) => e.type === "tool/result").map((e) => e.data.content[0].text)).toEqual([echoed]);
    const end = turn.find((e) => e.type === "turn/end")!;
    expect(end.data.reason).toBe("error");
    expect(end.data.code).toBe("QUOTA_EXCEEDED");
    expect(end.data.error).toMatch(new RegExp(`^QUOTA_EXCEEDED: this session's ${QUOTA.source}`));
    // the size the log kept in memory since its restart is what SQLite holds (UTF-8 bytes)
    const [sum] = await sqlRows<{ bytes: number }>(
      mid,
      "SELECT sum(octet_length(data)) AS bytes FROM events WHERE seq < ?",
      end.seq,
    );
    expect(end.data.error).toContain(`log holds ${sum!.bytes} bytes`);
    expect(await logBytes(mid)).toBeGreaterThanOrEqual(MAX_LOG_BYTES);

    await quiesce([top.id, mid]);
    const overKey = crypto.randomUUID();
    const over = reservedId(mid, overKey); // where a refused start's child would have been
    const objects = [stub(top.id), stub(mid), stub(leaf), stub(over), registryStub()];
    const before = await stateOf(objects);
    const refused = [
      await api("POST", `/v1/sessions/${mid}/messages`, { body: { content: "more" } }),
      await followup(top.id, mid, "more"), // to it
      await followup(mid, leaf, "more"), // from it
      await startRun(mid, { prompt: "hi", childId: overKey }),
      await startContinuable(mid, { prompt: "hi", childId: overKey }),
      await startRun(mid, { provider: "spawn", prompt: "hi" }),
    ];
    for (const res of refused) expectRefused(res, 422, "QUOTA_EXCEEDED", QUOTA);
    expect(await rpcFailure(() => rpc.send(mid, { content: "more" }))).toMatch(/^QUOTA_EXCEEDED: /);
    // the MCP face: an error result, and no mcp/call or mcp/result written for it
    const mcp = await jsonRpcAnswer(
      await postJsonRpc(
        mcpPath(mid),
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "echo", arguments: { text: "x".repeat(60_000) } },
        }),
      ),
    );
    expect(mcp.result).toMatchObject({ isError: true });
    expect(JSON.stringify(mcp.result.content)).toMatch(/QUOTA_EXCEEDED/);
    expect(await stateOf(objects)).toBe(before);
    expect(await tablesOf(over)).toEqual([]);

    // the leaf's end reaches it: recorded, and the turn its notice wakes ends at its first step
    expect((await interruptChild(mid, leaf)).status).toBe(202);
    const after = await eventually(
      () => eventsAfter(mid, filled),
      (es) => count(es, "subagent/end") === 1 && count(es, "turn/end") === 2,
      { what: "the leaf's end" },
    );
    expect(after.find((e) => e.type === "subagent/end")!.data).toMatchObject({
      id: leaf,
      stopReason: "aborted",
    });
    const woken = after.filter((e) => e.type === "turn/end").at(-1)!;
    expect(woken.data).toMatchObject({ reason: "error", error: expect.stringMatching(QUOTA) });
    expect(after.filter((e) => e.type === "assistant/message")).toHaveLength(1);
    // and `mid`'s epoch, settled now, ends (as `error`) in its own parent's log
    const topLog = await waitForEvents(top.id, (l) => count(l, "subagent/end") === 1);
    expect(topLog.find((e) => e.type === "subagent/end")!.data).toMatchObject({
      id: mid,
      stopReason: "error",
    });
  }, 120_000);
});
