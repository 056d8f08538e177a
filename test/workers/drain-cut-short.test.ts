import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { createSession, drain, followup, startChild, startContinuable, view } from "../support/api";
import { faults, never, removeAllFaults } from "../support/faults";
import { eventually, waitForEvents } from "../support/logs";
import { sqlRows, stub } from "../support/objects";
import { script } from "../support/scripts";

/**
 * A drain closes the session's admission with a durable flag, waits for its children, and reopens
 * admission. An object reset between the two (a crash, a deploy) must not keep refusing work: its
 * next instance finishes the drain it finds cut short.
 */

const SLOW = script({ think: 60_000 }, { say: "never" });

/** Resets a session's object the hard way: no `finally` of the running instance runs. */
async function reset(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance, state) => state.abort("reset mid-drain")).catch(() => {});
}

async function flagOf(id: string): Promise<string | null> {
  const rows = await sqlRows<{ value: string }>(id, "SELECT value FROM flags WHERE name = 'draining'");
  return rows[0]?.value ?? null;
}

describe("a drain cut short by a reset is finished by the next instance", () => {
  afterEach(() => removeAllFaults());

  it("a session reset in the middle of its own drain drains its children at boot and takes work again", async () => {
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { prompt: SLOW });
    await waitForEvents(childId, (log) => log.some((e) => e.type === "turn/start"));

    const plan = faults(parent.id, (point, n) => (point === "mid-drain" && n === 1 ? never() : undefined));
    const pending = drain(parent.id).catch(() => null); // its instance dies; the caller gets an error
    await plan.reached("mid-drain");
    expect(await flagOf(parent.id)).toBe("self");
    await reset(parent.id);
    plan.remove();
    await pending;

    // the new instance finishes the drain: the child is settled as drained, admission reopens
    await eventually(
      () => flagOf(parent.id),
      (flag) => flag === null,
      { what: "the draining flag to clear" },
    );
    const childRows = await sqlRows<{ state: string }>(
      parent.id,
      "SELECT state FROM children WHERE child_id = ?",
      childId,
    );
    expect(childRows).toEqual([{ state: "released" }]);
    await waitForEvents(childId, (log) =>
      log.some((e) => e.type === "turn/end" && e.data.reason === "aborted"),
    );
    expect((await view(childId)).status).toBe("idle");

    const again = await startContinuable(parent.id, { prompt: "after the reset" });
    expect(again.status).toBe(202);
    const resumed = await followup(parent.id, childId, "still there?");
    expect(resumed.status).toBe(202);
  });

  it("a child reset in the middle of the drain its parent asked for finishes it and sends its drained notice", async () => {
    const parent = await createSession();
    const { childId } = await startChild(parent.id, { prompt: SLOW });
    await waitForEvents(childId, (log) => log.some((e) => e.type === "turn/start"));

    const plan = faults(childId, (point, n) => (point === "mid-drain" && n === 1 ? never() : undefined));
    const pending = drain(parent.id).catch(() => null);
    await plan.reached("mid-drain");
    expect(await flagOf(childId)).toBe(`parent:${parent.id}`);
    await reset(childId);
    plan.remove();
    await pending;

    await eventually(
      () => flagOf(childId),
      (flag) => flag === null,
      { what: "the child's draining flag to clear" },
    );
    // the parent learns the drained epoch's end once, and neither session refuses work
    const log = await waitForEvents(parent.id, (es) =>
      es.some((e) => e.type === "subagent/end" && e.data.id === childId),
    );
    expect(log.filter((e) => e.type === "subagent/end" && e.data.id === childId)).toHaveLength(1);
    expect(await flagOf(parent.id)).toBeNull();
    expect((await startContinuable(parent.id, { prompt: "after the child's reset" })).status).toBe(202);
    expect((await followup(parent.id, childId, "resume")).status).toBe(202);
  });
});
