import { afterEach, describe, expect, inject, test } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { placedIdFromDigest } from "../../src/core/placement";
import { api, createSession, sendMessage } from "../support/api";
import { faults, never, removeAllFaults } from "../support/faults";
import { allEvents, eventually, ofType, textOf, type WireEvent } from "../support/logs";
import { evict, inboxOf } from "../support/objects";
import { script } from "../support/scripts";
import { Rng } from "./prng";

/**
 * An object reset while its implementation loads (README "Reliability"): a Worker's objects load
 * their implementation by `import()` when an instance first needs it (src/worker/lazy-parts.ts),
 * and the tests load it the same way. First, the isolate's very first load of the session
 * implementation is reset in flight: the create that woke it fails, and its retry (same idempotency
 * key) makes the session once. Then, per seed, a session accepts a message, its turn is parked at
 * the model call and the object is evicted with the message unanswered; its next instances are
 * reset one to three times at `in-load`, while their implementation's `import()` is in flight, each
 * by the event that woke it (an API read, which fails). The event after that loads it: the message
 * is answered exactly once, and a new instance loaded it after each reset. FAULT_SEEDS (a count or
 * `lo-hi`) and FAULT_SEED (one seed) pick the seeds, as for the campaign.
 */

const DEFAULT_SEEDS = 8;

afterEach(() => {
  removeAllFaults();
});

function seedList(): number[] {
  const one = inject("faultSeed");
  if (one) return one.split(",").map(Number);
  const given = inject("faultSeeds");
  const range = /^(\d+)-(\d+)$/.exec(given);
  if (range)
    return Array.from({ length: Number(range[2]) - Number(range[1]) + 1 }, (_, i) => Number(range[1]) + i);
  return Array.from({ length: given ? Number(given) : DEFAULT_SEEDS }, (_, i) => i + 1);
}

/** What broke "answered exactly once" in the session's log and inbox (none: it held). */
function checkAnsweredOnce(log: readonly WireEvent[], pending: number, answer: string): string[] {
  const wrong: string[] = [];
  const asked = ofType(log, "user/message");
  if (asked.length !== 1) wrong.push(`the message is in the log ${asked.length} times`);
  const said = ofType(log, "assistant/message").map((e) => textOf(e.data.content));
  if (said.length !== 1 || said[0] !== answer) wrong.push(`the answers are ${JSON.stringify(said)}`);
  const ends = ofType(log, "turn/end").map((e) => e.data.reason);
  if (ends.length !== 1 || ends[0] !== "completed") wrong.push(`the turns ended ${JSON.stringify(ends)}`);
  if (log.some((e, i) => e.seq !== i)) wrong.push("the log's seqs have a gap");
  if (pending > 0) wrong.push(`${pending} inbox rows still pending`);
  return wrong;
}

/** One seeded history; answers what the checker found. */
async function history(seed: number): Promise<string[]> {
  const rng = new Rng(seed * 7919 + 17);
  const resets = rng.int(1, 3);
  const answer = `answered after ${resets} resets (seed ${seed})`;
  const { id } = await createSession({ label: `resets while loading ${seed}` });

  // the message is accepted, its turn parked at the model call; then the instance goes
  const parked = faults(id, (point, n) => (point === "before-model" && n === 1 ? never() : undefined));
  await sendMessage(id, script({ think: rng.int(0, 50) }, { say: answer }));
  await parked.reached("before-model");
  await evict(id);
  parked.remove();

  // the next instances are reset while their implementation loads; each read wakes one
  const loads = faults(id, (point, n) => {
    // (the config's console filter leaves out what names the fault campaign)
    if (point === "in-load" && n <= resets)
      throw new Error(`fault campaign: reset at in-load (seed ${seed})`);
  });
  let refused = 0;
  const log = await eventually(
    async () => {
      try {
        return await allEvents(id);
      } catch {
        refused++;
        return [];
      }
    },
    (events) => ofType(events, "turn/end").length > 0,
    { what: `seed ${seed}: the message's answer`, timeoutMs: 30_000 },
  );
  const pending = (await inboxOf(id)).filter((row) => row.state === "pending").length;
  const wrong = checkAnsweredOnce(log, pending, answer);
  if (loads.count("in-load") < resets + 1)
    wrong.push(`the implementation loaded ${loads.count("in-load")} times for ${resets} resets`);
  // the event that woke a reset instance failed; it did not wait for good
  if (refused === 0) wrong.push("no read was refused by the resets");
  return wrong;
}

describe("an object reset while its implementation loads loses nothing (README 'Reliability')", () => {
  // first in the file: nothing has loaded the session implementation in this isolate yet
  test("the isolate's first load, reset in flight: the create fails, and its retry makes the session once", async () => {
    const key = `first load ${crypto.randomUUID()}`;
    // a keyed create's id is derived from its tenant and key, so the plan is installed before the object exists
    const id = placedIdFromDigest(await sha256Hex(`default\n${key}`));
    const loads = faults(id, (point, n) => {
      if (point === "in-load" && n === 1)
        throw new Error("fault campaign: reset at in-load (the first load)");
    });
    const first = await api("POST", "/v1/sessions", { body: { idempotencyKey: key } });
    expect(first.status, JSON.stringify(first.body)).toBe(500);
    const retried = await api("POST", "/v1/sessions", { body: { idempotencyKey: key } });
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(retried.body.id).toBe(id);
    const replayed = await api("POST", "/v1/sessions", { body: { idempotencyKey: key } });
    expect([replayed.status, replayed.body.id]).toEqual([200, id]);
    expect(loads.count("in-load")).toBe(2);
    const listed = await api("GET", "/v1/sessions?limit=200");
    expect(listed.body.sessions.filter((session: { id: string }) => session.id === id)).toHaveLength(1);
  });

  test("the checker is not vacuous: a second answer, a lost one, a dropped turn end and a pending row are caught", () => {
    const event = (seq: number, type: string, data: Record<string, unknown>): WireEvent => ({
      seq,
      type,
      at: 0,
      data,
    });
    const said = (seq: number) => event(seq, "assistant/message", { content: [{ type: "text", text: "a" }] });
    const log = [
      event(0, "user/message", { content: "q" }),
      said(1),
      event(2, "turn/end", { reason: "completed" }),
    ];
    expect(checkAnsweredOnce(log, 0, "a")).toEqual([]);
    expect(checkAnsweredOnce([...log, said(3)], 1, "a")).toEqual([
      'the answers are ["a","a"]',
      "1 inbox rows still pending",
    ]);
    expect(checkAnsweredOnce([log[0]!], 0, "a")).toEqual(["the answers are []", "the turns ended []"]);
  });

  for (const seed of seedList()) {
    test(`seed ${seed}`, async () => {
      expect(await history(seed)).toEqual([]);
    });
  }
});
