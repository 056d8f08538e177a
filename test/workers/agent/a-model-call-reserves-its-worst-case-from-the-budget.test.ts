import { afterEach, describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { fakeRequestsMentioning } from "../../support/fake-openai";
import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { deferred, faults, never, removeAllFaults } from "../../support/faults";
import { allEvents, eventually, waitForEvents, type WireEvent } from "../../support/logs";
import { sqlRows, stub } from "../../support/objects";

/**
 * Budget reservations (README "Prices and budgets", semantics.md §8): each model call reserves
 * its worst case (the request's estimate plus its output limit) at the budget's owner before it
 * is made, and returns what it did not use when it ends; a call that does not fit is not made.
 * Reservations are rows at the owner keyed by the session and naming the call, so a retried
 * reserve is the same reservation and a crash between the call and its settle neither leaks one
 * nor counts one twice. The tests' OpenAI-compatible server reports the input of `ctx-<N>`
 * models as the real API counts it (about a token per four characters).
 */

const MODEL = "openai:ctx-1000000";

afterEach(() => removeAllFaults());

/** The reservations the budget's owner holds. */
function reservations(owner: string) {
  return sqlRows<{ member_id: string; step_key: string; tokens: number }>(
    owner,
    "SELECT member_id, step_key, tokens FROM budget_reservations",
  );
}

function stepsSpent(log: WireEvent[]): number {
  return log
    .filter((e) => e.type === "assistant/message")
    .reduce((n, e) => n + e.data.usage.inputTokens + e.data.usage.outputTokens, 0);
}

async function budgetOf(id: string): Promise<{ tokens: number; used: number }> {
  return (await api("GET", `/v1/sessions/${id}`)).body.budget;
}

async function turn(id: string, content: string, n: number): Promise<WireEvent[]> {
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
  return waitForEvents(id, (es) => es.some((e) => e.type === "turn/end" && e.data.turn === n), {
    what: `turn ${n}`,
  });
}

describe("a model call reserves its worst case from the budget", () => {
  it("a step whose reservation does not fit does not run: its turn ends BUDGET_EXCEEDED naming the reservation and the remainder", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 600 } });
    const marker = `does not fit ${crypto.randomUUID()}`;
    const log = await turn(id, marker, 1);
    const end = log.find((e) => e.type === "turn/end")!;
    expect(end.data.reason).toBe("error");
    expect(end.data.code).toBe("BUDGET_EXCEEDED");
    expect(end.data.error).toMatch(
      /^BUDGET_EXCEEDED: the session's token budget of 600 cannot cover this model call: it reserves \d+ tokens \(its input estimate plus its output limit\) and 600 are left \(0 used, 0 reserved by calls under way\); lower maxOutputTokens or raise the budget$/,
    );
    expect(log.filter((e) => e.type === "assistant/message")).toEqual([]);
    expect(await fakeRequestsMentioning(marker)).toEqual([]);
    expect(await budgetOf(id)).toEqual({ tokens: 600, used: 0 });
    expect(await reservations(id)).toEqual([]);
  });

  it("returns what a step did not use: the budget counts the usage, and a child's reservation ends with its run", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 100_000 }, maxOutputTokens: 300 });
    const own = await turn(id, "first", 1);
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "a child's question", model: MODEL },
    });
    expect(started.status).toBe(201);
    const { id: childId, runId } = started.body as { id: string; runId: string };
    const run = await api("GET", `/v1/sessions/${id}/runs/${runId}?wait=15000`);
    expect(run.body.state).toBe("settled");
    // the budget counts what the steps used (each far below its reservation of input + 300), once
    const spent = stepsSpent(own) + stepsSpent(await allEvents(childId));
    expect((await budgetOf(id)).used).toBe(spent);
    expect((await budgetOf(childId)).used).toBe(spent);
    // and nothing stays reserved once the calls are over
    await eventually(
      () => reservations(id),
      (rows) => rows.length === 0,
      { what: "no reservation left" },
    );
  });

  it("a retried reserve is the same reservation; a settle applies once", async () => {
    const { id: owner } = await createSession({ model: MODEL, budget: { tokens: 1000 } });
    const owners = stub(owner);
    const reserve = (member: string, key: string, tokens: number) =>
      owners.drawBudget(member, {
        spend: { tokens: 0, usd: 0 },
        reserve: { key, worst: { tokens, usd: 0 }, holdMs: 600_000 },
      });
    // 600 of 1,000, asked for three times (a lost answer, a step re-run after a crash): held once
    for (let i = 0; i < 3; i++)
      expect(await reserve("member-a", "1.0", 600)).toEqual({ used: { tokens: 0, usd: 0 } });
    expect(await reservations(owner)).toEqual([{ member_id: "member-a", step_key: "1.0", tokens: 600 }]);
    // so another session's 600 does not fit beside it
    const refused = await reserve("member-b", "1.0", 600);
    expect(refused?.refused).toMatch(/it reserves 600 tokens .* and 400 are left \(0 used, 600 reserved/);
    // member-a's call used 250: settled (twice, as a retry would), its 600 are free again and 250 count
    for (let i = 0; i < 2; i++)
      expect(await owners.drawBudget("member-a", { spend: { tokens: 250, usd: 0 }, settle: "1.0" })).toEqual({
        used: { tokens: 250, usd: 0 },
      });
    expect(await reservations(owner)).toEqual([]);
    expect(await reserve("member-b", "1.0", 600)).toEqual({ used: { tokens: 250, usd: 0 } });
    // a settle of a call member-b no longer holds releases nothing
    await owners.drawBudget("member-b", { spend: { tokens: 0, usd: 0 }, settle: "0.9" });
    expect(await reservations(owner)).toHaveLength(1);
  });

  it("a crash between a child's call and its settle neither leaks its reservation nor counts its spending twice", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 8000 }, maxOutputTokens: 100 });
    // a child whose model calls a tool at every step: only the budget ends its turn
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "keep using the tool", model: MODEL },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const { id: childId, runId } = started.body as { id: string; runId: string };
    // it crashes right after appending a step, its reservation still held at the owner
    const childFaults = faults(childId, (point, n) =>
      point === "after-append" && n === 1 ? "throw" : undefined,
    );
    await childFaults.reached("after-append");
    const run = await eventually(
      () => api("GET", `/v1/sessions/${id}/runs/${runId}?wait=5000`),
      (r) => r.body.state === "settled",
      { timeoutMs: 30_000, what: "the child's run to settle" },
    );
    expect(run.body.result.stopReason).toBe("error");
    const log = await allEvents(childId);
    expect(log.find((e) => e.type === "turn/end")!.data.code).toBe("BUDGET_EXCEEDED");
    // every step counted once, within the budget, and nothing left reserved
    const spent = stepsSpent(log);
    expect((await budgetOf(id)).used).toBe(spent);
    expect(spent).toBeLessThanOrEqual(8000);
    await eventually(
      () => reservations(id),
      (rows) => rows.length === 0,
      { what: "no reservation left" },
    );
    expect(await sqlRows(childId, "SELECT value FROM flags WHERE name = 'budget:held'")).toEqual([]);
  });

  it("a step that crashed between its call and its append runs again on the same reservation", async () => {
    const { id } = await createSession({ model: MODEL, budget: { tokens: 100_000 }, maxOutputTokens: 300 });
    // park the in-process driver so the step runs from the alarm, where a crash surfaces
    const reached = deferred();
    const parking = faults(id, (point) => {
      if (point !== "before-drive") return;
      reached.resolve();
      return never();
    });
    const marker = `crashed once ${crypto.randomUUID()}`;
    const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: marker } });
    expect(sent.status).toBe(202);
    await reached.promise;
    parking.remove();
    await evictDurableObject(stub(id));
    let crashes = 0;
    faults(id, (point) => {
      if (point === "before-append" && crashes++ === 0) throw new Error("crash before append (injected)");
    });
    await expect(runDurableObjectAlarm(stub(id))).rejects.toThrow("crash before append (injected)");
    const held = await reservations(id);
    expect(held).toEqual([{ member_id: id, step_key: "1.0", tokens: expect.any(Number) }]);
    // a restart re-runs the step: the reservation it holds is its own, asked for again
    await evictDurableObject(stub(id));
    await runDurableObjectAlarm(stub(id));
    const log = await waitForEvents(id, (es) => es.some((e) => e.type === "turn/end"), {
      what: "the turn to end",
    });
    expect(log.find((e) => e.type === "turn/end")!.data.reason).toBe("completed");
    expect(await fakeRequestsMentioning(marker)).toHaveLength(2); // the crashed call, and the re-run's
    // the appended step counted once, and its reservation settled
    expect((await budgetOf(id)).used).toBe(stepsSpent(log));
    await eventually(
      () => reservations(id),
      (rows) => rows.length === 0,
      { what: "no reservation left" },
    );
  });
});
