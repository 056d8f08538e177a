import { describe, expect, it } from "vitest";
import { rpc, rpcFailure } from "../../support/api";
import { assistantTexts, turnsOf, waitForEvents, waitForTurnEnds } from "../../support/logs";
import { script } from "../../support/scripts";

describe("the RPC entrypoint for service bindings (semantics.md §5.5, §13)", () => {
  it("starts a one-shot child and hands back a run handle whose result settles", async () => {
    const session = await rpc.createSession({});
    expect(session.token).toContain(session.id);
    using handle = await rpc.start(session.id, { provider: "spawn", prompt: "ping" });
    expect(await handle.local).toBe(true);
    expect(typeof (await handle.runId)).toBe("string");
    const result = await handle.result();
    expect(result).toEqual({ output: [{ type: "text", text: "echo: ping" }], stopReason: "completed" });
  });

  it("disposes a thinking child: the result is aborted and dispose waits for it", async () => {
    const session = await rpc.createSession({});
    using handle = await rpc.start(session.id, {
      provider: "spawn",
      prompt: script({ think: 5000 }, { say: "late" }),
    });
    await handle.dispose();
    const result = await handle.result();
    expect(result.stopReason).toBe("aborted");
    expect(result.output).toEqual([]);
  });

  it("refuses bad arguments with a stable code in the message", async () => {
    expect(await rpcFailure(() => rpc.start("not-a-uuid", { provider: "spawn", prompt: "x" }))).toMatch(
      /^INVALID_REQUEST/,
    );
    const session = await rpc.createSession({});
    expect(await rpcFailure(() => rpc.start(session.id, { provider: "nope", prompt: "x" }))).toMatch(
      /^NO_PROVIDER/,
    );
    expect((await rpc.providers()).map((p: any) => p.name).slice(0, 2)).toEqual(["spawn", "fork"]);
  });

  it("manages continuable children: start, list, follow up, drain", async () => {
    const session = await rpc.createSession({});
    const started = await rpc.startContinuable(session.id, {
      provider: "spawn",
      prompt: script({ think: 5000 }, { say: "slow" }),
      label: "helper",
    });
    expect(started.messageId).toMatch(/^msg_/);
    const listed = await rpc.listChildren(session.id);
    expect(listed.entries.map((e: any) => [e.id, e.mode, e.label])).toEqual([
      [started.childId, "continuable", "helper"],
    ]);
    const followed = await rpc.followup(session.id, started.childId, { content: "second" });
    expect(followed.messageId).toMatch(/^msg_/);
    expect(await rpcFailure(() => rpc.followup(session.id, "nope", { content: "x" }))).toMatch(
      /^INVALID_REQUEST/,
    );
    const drained = await rpc.drain(session.id);
    expect(drained.drained).toEqual([started.childId]);
    expect((await rpc.listDescendants(session.id)).entries.map((e: any) => [e.id, e.depth])).toEqual([
      [started.childId, 1],
    ]);
    expect(await rpc.interruptChild(session.id, started.childId)).toEqual({ accepted: true });
  });
});

describe("the RPC entrypoint's control over time (README 'Steering, deadlines and schedules')", () => {
  it("steers a running turn with send's delivery, keeps schedules, and deletes a session (then it is not found)", async () => {
    const session = await rpc.createSession({});
    await rpc.send(session.id, { content: script({ think: 1_000 }, { say: "first" }) });
    await waitForEvents(session.id, (es) => es.some((e) => e.type === "user/message"));
    await rpc.send(session.id, { content: "steered", delivery: "next-step" });
    const events = await waitForTurnEnds(session.id, 1);
    expect(turnsOf(events)).toHaveLength(1);
    expect(assistantTexts(events)).toEqual(["first", "echo: steered"]);

    const made = await rpc.schedule(session.id, { cron: "0 6 * * *", content: "morning" });
    expect(made.scheduleId).toMatch(/^sch_/);
    expect((await rpc.schedules(session.id)).schedules.map((s: any) => s.scheduleId)).toEqual([
      made.scheduleId,
    ]);
    await rpc.unschedule(session.id, made.scheduleId);
    expect((await rpc.schedules(session.id)).schedules).toEqual([]);
    expect(await rpcFailure(() => rpc.schedule(session.id, { cron: "nope", content: "x" }))).toMatch(
      /^INVALID_REQUEST/,
    );

    expect(await rpc.delete(session.id)).toEqual({ accepted: true });
    expect(await rpcFailure(() => rpc.describe(session.id))).toMatch(/^NOT_FOUND/);
  });
});
