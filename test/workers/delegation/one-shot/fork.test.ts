import { describe, expect, it } from "vitest";
import { createSession, sendMessage, startOneShot, view, waitForRun } from "../../../support/api";
import {
  allEvents,
  assistantTexts,
  ofType,
  waitForChild,
  waitForEvents,
  waitForTurnEnds,
} from "../../../support/logs";
import { script } from "../../../support/scripts";

/**
 * The `fork` provider (semantics.md §5.8): the child's log begins with the parent's events through
 * its last `turn/end`, and the result reads only the child's own events after the seed.
 */

/** Turns never overlap and every turn/end closes the open turn (the log replays as balanced). */
function expectBalanced(events: any[]): void {
  let open: number | null = null;
  for (const e of events) {
    if (e.type === "turn/start") {
      expect(open).toBeNull();
      open = e.data.turn;
    } else if (e.type === "turn/end") {
      expect(e.data.turn).toBe(open);
      open = null;
    }
  }
}

describe("fork (semantics.md §5.8)", () => {
  it("fork seeds exactly the parent's events through the last turn/end (header seedLength), excludes an open turn, and leaves a parent without a completed turn's child unseeded", async () => {
    // (a) two completed turns, then an HTTP fork
    const parent = await createSession();
    await sendMessage(parent.id, "one");
    await waitForTurnEnds(parent.id, 1);
    await sendMessage(parent.id, "two");
    const parentLog = await waitForTurnEnds(parent.id, 2);
    const seedLength = parentLog.findLastIndex((e) => e.type === "turn/end") + 1;
    expect(seedLength).toBe(parentLog.length);

    const fork = await startOneShot(parent.id, { provider: "fork", prompt: "forked question" });
    expect((await waitForRun(parent.id, fork.runId)).result).toEqual({
      output: [{ type: "text", text: "echo: forked question" }],
      stopReason: "completed",
    });
    expect(await view(fork.id)).toMatchObject({ parentSession: parent.id, delegationDepth: 1, seedLength });
    const childLog = await allEvents(fork.id);
    expect(childLog.slice(0, seedLength)).toEqual(parentLog.slice(0, seedLength));
    expect(childLog[seedLength]).toMatchObject({
      seq: seedLength,
      type: "session/end-seed",
      data: { seedLength },
    });
    expect(childLog[seedLength + 1]).toMatchObject({
      type: "subagent/descriptor",
      data: { version: 2, mode: "one-shot", provider: "fork" },
    });
    expect(ofType(childLog.slice(seedLength), "turn/start").map((e) => e.data.turn)).toEqual([3]);
    expectBalanced(childLog);

    // (b) forking from inside the parent's open turn: the open turn is not part of the seed
    const busy = await createSession();
    await sendMessage(busy.id, "completed turn");
    await waitForTurnEnds(busy.id, 1);
    await sendMessage(
      busy.id,
      script(
        {
          call: [
            {
              tool: "subagent_fork",
              args: { description: "inside", prompt: "from the open turn", run_in_background: false },
            },
          ],
        },
        { say: "parent resumed" },
      ),
    );
    const busyLog = await waitForTurnEnds(busy.id, 2);
    const forkId = ofType(busyLog, "subagent/start")[0]!.data.id;
    const firstEnd = busyLog.findIndex((e) => e.type === "turn/end");
    const openStart = busyLog.findLastIndex((e) => e.type === "turn/start");
    expect(ofType(busyLog, "subagent/start")[0]!.seq).toBeGreaterThan(openStart);
    expect((await view(forkId)).seedLength).toBe(firstEnd + 1);
    const forkLog = await allEvents(forkId);
    expect(forkLog.slice(0, firstEnd + 1)).toEqual(busyLog.slice(0, firstEnd + 1));
    expect(forkLog[firstEnd + 1]).toMatchObject({
      type: "session/end-seed",
      data: { seedLength: firstEnd + 1 },
    });
    expect(ofType(forkLog, "turn/start").map((e) => e.data.turn)).toEqual([1, 2]);
    expectBalanced(forkLog);
    expect(ofType(busyLog, "tool/result")[0]!.data).toMatchObject({
      name: "subagent_fork",
      isError: false,
      content: [{ type: "text", text: "echo: from the open turn" }],
    });
    expect(assistantTexts(busyLog).at(-1)).toBe("parent resumed");

    // (c) a parent that never completed a turn: the child is fresh, with no seedLength
    const fresh = await createSession();
    const unseeded = await startOneShot(fresh.id, { provider: "fork", prompt: "alone" });
    await waitForRun(fresh.id, unseeded.runId);
    expect(await view(unseeded.id)).not.toHaveProperty("seedLength");
    const unseededLog = await allEvents(unseeded.id);
    expect(unseededLog[0]!.type).toBe("subagent/descriptor");
    expect(ofType(unseededLog, "session/end-seed")).toEqual([]);
    expect(ofType(unseededLog, "turn/start").map((e) => e.data.turn)).toEqual([1]);
    // and from inside a first (still open) turn the seed is empty too
    const opening = await createSession();
    await sendMessage(
      opening.id,
      script(
        {
          call: [
            {
              tool: "subagent_fork",
              args: { description: "first", prompt: "early", run_in_background: false },
            },
          ],
        },
        { say: "ok" },
      ),
    );
    await waitForTurnEnds(opening.id, 1);
    const earlyFork = await waitForChild(opening.id);
    expect(await view(earlyFork)).not.toHaveProperty("seedLength");
    expect((await allEvents(earlyFork))[0]!.type).toBe("subagent/descriptor");
  });

  it("a fork child whose turn produced no text returns output [] and never the seeded parent's text", async () => {
    const parent = await createSession();
    await sendMessage(parent.id, "seeded words");
    await waitForTurnEnds(parent.id, 1);
    const silent = await startOneShot(parent.id, { provider: "fork", prompt: script({ say: "" }) });
    const ceiling = await startOneShot(parent.id, {
      provider: "fork",
      prompt: script({ stop: "max-tokens" }),
    });
    expect((await waitForRun(parent.id, silent.runId)).result).toEqual({
      output: [],
      stopReason: "completed",
    });
    expect((await waitForRun(parent.id, ceiling.runId)).result).toEqual({
      output: [],
      stopReason: "max-tokens",
    });
    // the seed does hold the parent's answer, which the result ignored
    expect(assistantTexts(await allEvents(silent.id))).toEqual(["echo: seeded words", ""]);
    const log = await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 2);
    for (const end of ofType(log, "subagent/end")) expect("lastAssistantMessage" in end.data).toBe(false);
  });
});
