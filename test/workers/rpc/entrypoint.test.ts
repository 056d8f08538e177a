import { describe, expect, it } from "vitest";
import { rpc, rpcFailure } from "../../support/api";
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
