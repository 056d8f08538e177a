import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../../durable-objects/store/event-log";
import { migrate } from "../../../durable-objects/store/schema";
import { SessionStores } from "../../../durable-objects/store/session-stores";
import type { Envelope } from "../../../src/contract/envelope";
import { stub } from "../../support/objects";

const envelope = (id: string, from: string, linkSeq?: number, after?: number): Envelope => ({
  v: 1,
  id,
  from,
  to: "receiver",
  kind: "run-result",
  runId: id,
  result: { stopReason: "completed", output: [] },
  ...(linkSeq === undefined ? {} : { linkSeq }),
  ...(after === undefined ? {} : { after }),
});

/** A session's stores over a brand-new object's storage, for `body`. */
async function withStores(body: (stores: SessionStores) => void): Promise<void> {
  await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
    const created = migrate(state.storage);
    body(new SessionStores(state.storage, new EventLog(state.storage.sql), () => {}, { created }));
  });
}

/** The receiver's side of per-link order and de-duplication (semantics.md §11.2), as delivery asks it. */
describe("the receipts of a session", () => {
  it("take each link's envelopes in order: the next one moves the link, an older one is old, a later one early", async () => {
    await withStores(({ receipts }) => {
      expect(receipts.linkOrder(envelope("a1", "a", 1))).toBe("next");
      expect(receipts.linkOrder(envelope("a1", "a", 1))).toBe("old");
      expect(receipts.linkOrder(envelope("a3", "a", 3))).toBe("early");
      // another sender's link has its own order
      expect(receipts.linkOrder(envelope("b1", "b", 1))).toBe("next");
      expect(receipts.linkOrder(envelope("a2", "a", 2))).toBe("next");
      expect(receipts.linkOrder(envelope("a3", "a", 3))).toBe("next");
      // an envelope without a link position (a direct delivery) is always next
      expect(receipts.linkOrder(envelope("direct", "a"))).toBe("next");
    });
  });

  it("skip a gap the sender says will never be filled, and no other", async () => {
    await withStores(({ receipts }) => {
      expect(receipts.linkOrder(envelope("a1", "a", 1))).toBe("next");
      // positions 2 and 3 will never come (`after` 1 is below the link's next position, 2)
      expect(receipts.linkOrder(envelope("a4", "a", 4, 1))).toBe("next");
      expect(receipts.linkOrder(envelope("a2", "a", 2))).toBe("old");
      // a gap that starts past what the link has taken is not skipped
      expect(receipts.linkOrder(envelope("a7", "a", 7, 5))).toBe("early");
    });
  });

  it("say an envelope id is new once, and only in a transaction that commits", async () => {
    await withStores((stores) => {
      const { receipts } = stores;
      expect(() =>
        stores.transact(() => {
          expect(receipts.firstSeen("x")).toBe(true);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      expect(stores.transact(() => receipts.firstSeen("x"))).toBe(true);
      expect(stores.transact(() => receipts.firstSeen("x"))).toBe(false);
      expect(stores.transact(() => receipts.firstSeen("y"))).toBe(true);
    });
  });
});
