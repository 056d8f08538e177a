import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../../durable-objects/store/event-log";
import { FirstUseTables } from "../../../durable-objects/store/first-use-tables";
import { Inbox } from "../../../durable-objects/store/inbox";
import { MAX_ATTEMPTS, Outbox } from "../../../durable-objects/store/outbox";
import { Runs } from "../../../durable-objects/store/runs";
import { migrate, tablesIn } from "../../../durable-objects/store/schema";
import type { ChildInit } from "../../../src/contract/child-init";
import { SessionStores } from "../../../durable-objects/store/session-stores";
import type { Envelope } from "../../../src/contract/envelope";
import { stub } from "../../support/objects";

/** A small deterministic generator (mulberry32: the same sequence on every run). */
function random(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * n) | 0;
  };
}

/**
 * Plays 300 random writes, each in its own transaction, and compares after each (`compare`).
 * The first 150 only commit (a rollback makes the stores forget what they kept: it is asked
 * again); after them one write in eight runs in a transaction that rolls back, and nothing of it
 * may be remembered. `at` hears each step's number before its write.
 */
function play(
  stores: SessionStores,
  next: (n: number) => number,
  ops: readonly (() => unknown)[],
  compare: (step: number) => void,
  at: (step: number) => void = () => {},
): void {
  for (let step = 0; step < 300; step++) {
    at(step);
    const op = ops[next(ops.length)]!;
    if (step >= 150 && next(8) === 0) {
      expect(() =>
        stores.transact(() => {
          op();
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
    } else stores.transact(() => op());
    compare(step);
  }
}

const envelope = (id: string, to: string): Envelope => ({
  v: 1,
  id,
  from: "sender",
  to,
  kind: "run-result",
  runId: id,
  result: { stopReason: "completed", output: [] },
});

/**
 * The outbox and the inbox keep some answers across their own writes (the next position and
 * link sequence, whether any row is dead or withdrawn, the live rows and when the next is due,
 * the pending queue). Whatever the writes
 * and rollbacks, those answers must be what SQLite says: each is compared with a store that has
 * no memory (a new instance over the same tables).
 */
describe("answers the stores keep across their own writes", () => {
  it.each([1, 2, 3, 4])(
    "match SQLite after every write and rollback of a random sequence (seed %i)",
    async (seed) => {
      await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
        const created = migrate(state.storage);
        const log = new EventLog(state.storage.sql);
        const stores = new SessionStores(state.storage, log, () => {}, { created });
        const sqlite = () => ({
          outbox: new Outbox(state.storage.sql, new EventLog(state.storage.sql)),
          inbox: new Inbox(state.storage.sql, new EventLog(state.storage.sql)),
        });
        const next = random(seed);
        const targets = ["a", "b", "c"];
        let n = 0;
        let step = 0;
        // the first gap of a sequence is a dead letter (odd seeds) or a withdrawal (even seeds): the
        // other kind comes from step 150 on, so each is the one that ends the outbox's gap-free run
        const gapsAllowed = (kind: "dead" | "withdrawn"): boolean =>
          step >= 150 || (kind === "dead") === (seed % 2 === 1);
        const ops = [
          () => stores.outbox.enqueue(envelope(`e${n++}`, targets[next(3)]!)),
          () => stores.outbox.enqueue(envelope(`e${next(Math.max(1, n))}`, "a")), // maybe a duplicate id
          () => {
            const row = stores.outbox.due(Number.MAX_SAFE_INTEGER)[0];
            if (row) stores.outbox.markDelivered(row.id);
          },
          () => {
            const row = stores.outbox.due(Number.MAX_SAFE_INTEGER)[0];
            if (row) stores.outbox.markFailed(row, "failed", false);
          },
          () => {
            const row = stores.outbox.due(Number.MAX_SAFE_INTEGER)[0];
            if (row && gapsAllowed("dead"))
              stores.outbox.markFailed({ ...row, attempts: MAX_ATTEMPTS - 1 }, "dead", false);
          },
          () => {
            const row = stores.outbox.due(Number.MAX_SAFE_INTEGER)[next(3)];
            if (row && gapsAllowed("withdrawn")) stores.outbox.withdraw(row.id);
          },
          () => {
            const row = stores.outbox.due(Number.MAX_SAFE_INTEGER)[0];
            if (row) stores.outbox.claimSend(row);
          },
          () =>
            stores.inbox.admit({
              messageId: `m${n++}`,
              lane: next(2) === 0 ? "next-turn" : "next-step",
              waking: next(2) === 0,
              source: { kind: "user" },
              content: [{ type: "text", text: "hi" }],
              contentHash: "h",
              ...(next(3) === 0 ? { idempotencyKey: `k${next(5)}` } : {}),
            }),
          () => {
            const item = stores.inbox.pending()[next(2)];
            if (item) stores.inbox.claim(item.messageId);
          },
          () => {
            if (next(6) === 0) stores.inbox.discardPending("drained");
          },
        ];
        const compare = (step: number) => {
          const truth = sqlite();
          expect(stores.inbox.pending(), `pending after step ${step}`).toEqual(truth.inbox.pending());
          expect(stores.outbox.nextDue(), `next due after step ${step}`).toBe(truth.outbox.nextDue());
          expect(stores.outbox.due(Number.MAX_SAFE_INTEGER), `live rows after step ${step}`).toEqual(
            truth.outbox.due(Number.MAX_SAFE_INTEGER),
          );
          const live = truth.outbox.due(Number.MAX_SAFE_INTEGER);
          for (const row of live)
            expect(stores.outbox.gapBelow(row), `gap below ${row.id} after step ${step}`).toBe(
              truth.outbox.gapBelow(row),
            );
          // the sequence an enqueue gives is the link's row count (what SQLite says), position the max
          const rows = state.storage.sql
            .exec<{ id: string; position: number; target: string; payload: string }>(
              "SELECT id, position, target, payload FROM outbox ORDER BY position",
            )
            .toArray();
          const seen = new Map<string, number>();
          rows.forEach((row, i) => {
            expect(row.position, `position of ${row.id}`).toBe(i + 1);
            const seq = (seen.get(row.target) ?? 0) + 1;
            seen.set(row.target, seq);
            expect((JSON.parse(row.payload) as { linkSeq: number }).linkSeq, `linkSeq of ${row.id}`).toBe(
              seq,
            );
          });
        };
        play(stores, next, ops, compare, (n) => {
          step = n;
        });
        // the sequence exercised every kind of row
        const kinds = state.storage.sql
          .exec<{ delivered: number; dead: number; withdrawn: number }>(
            "SELECT count(delivered_at) AS delivered, count(dead_at) AS dead, sum(withdrawn) AS withdrawn FROM outbox",
          )
          .one();
        expect(kinds.delivered).toBeGreaterThan(0);
        expect(kinds.dead).toBeGreaterThan(0);
        expect(kinds.withdrawn).toBeGreaterThan(0);
      });
    },
  );

  it.each([1, 2, 3, 4])(
    "the runs' polls match SQLite after every start, publication, settlement and hold (seed %i)",
    async (seed) => {
      await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
        const created = migrate(state.storage);
        const stores = new SessionStores(state.storage, new EventLog(state.storage.sql), () => {}, {
          created,
        });
        const sqlite = () =>
          new Runs(new FirstUseTables(state.storage.sql, tablesIn(state.storage.sql)).sql("runs"));
        const next = random(seed);
        const ids: string[] = [];
        const any = () => ids[next(Math.max(1, ids.length))];
        const spec = { prompt: [{ type: "text", text: "hi" }] } as unknown as ChildInit;
        const ops = [
          () => {
            const runId = `r${ids.length}`;
            ids.push(runId);
            stores.runs.insert({
              runId,
              childId: `c${ids.length}`,
              provider: "spawn",
              local: next(3) !== 0,
              callKey: null,
              taskId: null,
              toolName: null,
              spec,
              createdAt: ids.length,
            });
          },
          () => {
            const runId = any();
            if (runId) {
              stores.runs.get(runId); // the row known before the write, or not
              stores.runs.markRunning(runId);
            }
          },
          () => {
            const runId = any();
            if (runId) stores.runs.markRunning(runId);
          },
          () => {
            const runId = any();
            if (runId) stores.runs.settle(runId, { stopReason: "completed", output: [] });
          },
          () => {
            const runId = any();
            if (runId) {
              stores.runs.get(runId);
              stores.runs.settle(runId, { stopReason: "completed", output: [{ type: "text", text: "x" }] });
            }
          },
          () => {
            const runId = any();
            if (runId && next(4) === 0) stores.runs.hold(runId, 1_000 + next(100));
          },
          () => {
            const runId = any();
            if (runId && next(4) === 0) stores.runs.unhold(runId);
          },
          () => {
            const runId = any();
            if (runId && next(6) === 0) stores.runs.delete(runId);
          },
          () => {
            const runId = any();
            if (runId && next(3) === 0) stores.runs.requestCancel(runId);
          },
        ];
        const sorted = (list: readonly string[]) => [...list].sort();
        const compare = (step: number) => {
          const truth = sqlite();
          for (const runId of ids)
            expect(stores.runs.get(runId), `run ${runId} after step ${step}`).toEqual(truth.get(runId));
          expect(sorted(stores.runs.startingIds()), `starting after step ${step}`).toEqual(
            sorted(truth.startingIds()),
          );
          expect(sorted(stores.runs.runningLocalChildren()), `running local after step ${step}`).toEqual(
            sorted(truth.runningLocalChildren()),
          );
          const byId = (rows: readonly { runId: string }[]) =>
            [...rows].sort((a, b) => a.runId.localeCompare(b.runId));
          expect(byId(stores.runs.unsettledRemote()), `far-side after step ${step}`).toEqual(
            byId(truth.unsettledRemote()),
          );
          expect(stores.runs.nextHeldExpiry(), `held expiry after step ${step}`).toBe(truth.nextHeldExpiry());
        };
        play(stores, next, ops, compare);
        const states = state.storage.sql
          .exec<{ state: string }>("SELECT DISTINCT state FROM runs ORDER BY state")
          .toArray()
          .map((r) => r.state);
        expect(states).toEqual(["running", "settled", "starting"]);
      });
    },
  );
});
