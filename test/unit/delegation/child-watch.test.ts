import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  CHILD_WATCH_MAX_MS,
  CHILD_WATCH_MS,
  ChildWatch,
} from "../../../durable-objects/delegation/child-watch";
import type { Remote, SessionRpc } from "../../../src/contract/session-api";
import type { SessionStores } from "../../../durable-objects/store/session-stores";

/**
 * The parent's watchdog over its working children, on its own: when it looks, whom it asks, how
 * it backs off while every child's wake-up is in place and comes back to a minute when one had to
 * be repaired, and that it stops when no child works.
 */

interface World {
  oneShots: string[];
  continuables: string[];
  /** Per child: whether `wake()` had to repair (a lost alarm). */
  lost: Set<string>;
  asked: string[];
  armed: number[];
}

function watchOver(world: World): ChildWatch {
  const stores = {
    runs: { runningLocalChildren: () => world.oneShots },
    epochs: { publishedChildren: () => world.continuables },
  } as unknown as SessionStores;
  const session = (id: string) =>
    ({
      wake: async () => {
        world.asked.push(id);
        if (id === "gone") throw new Error("unreachable");
        return world.lost.delete(id);
      },
    }) as unknown as Remote<SessionRpc>;
  return new ChildWatch(stores, session, {
    wakeBy: async (at) => {
      world.armed.push(at);
    },
  });
}

function world(partial: Partial<World> = {}): World {
  return { oneShots: [], continuables: [], lost: new Set(), asked: [], armed: [], ...partial };
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(now);
});
afterEach(() => vi.useRealTimers());
function advance(ms: number): void {
  now += ms;
  vi.setSystemTime(now);
}

describe("the child watch", () => {
  it("is not due while no child works, and due a minute out once one does", () => {
    const w = world();
    const watch = watchOver(w);
    expect(watch.nextDue()).toBeUndefined();
    w.oneShots.push("a");
    expect(watch.nextDue()).toBe(now + CHILD_WATCH_MS);
    advance(10_000);
    expect(watch.nextDue()).toBe(now - 10_000 + CHILD_WATCH_MS); // the schedule holds, it does not slide
  });

  it("asks every working child once per look (one-shot runs and continuable epochs, each once)", async () => {
    const w = world({ oneShots: ["a", "b"], continuables: ["b", "c"] });
    const watch = watchOver(w);
    watch.nextDue();
    expect(await watch.repair()).toBe(false); // not due yet: nobody is asked
    expect(w.asked).toEqual([]);
    advance(CHILD_WATCH_MS);
    expect(await watch.repair()).toBe(false); // never asks the loop for another pass
    expect(w.asked.sort()).toEqual(["a", "b", "c"]);
  });

  it("backs off while every wake-up is in place, to fifteen minutes at most, and resets on a repair", async () => {
    const w = world({ oneShots: ["a", "gone"] });
    const watch = watchOver(w);
    const intervals: number[] = [];
    watch.nextDue();
    for (let look = 0; look < 7; look++) {
      const due = watch.nextDue()!;
      advance(due - now);
      await watch.repair();
      intervals.push(watch.nextDue()! - now);
    }
    expect(intervals).toEqual([2, 4, 8, 15, 15, 15, 15].map((m) => Math.min(m * 60_000, CHILD_WATCH_MAX_MS)));

    w.lost.add("a"); // a's alarm was lost: this look repairs it, and the watch is back to a minute
    advance(watch.nextDue()! - now);
    await watch.repair();
    expect(watch.nextDue()! - now).toBe(CHILD_WATCH_MS);
  });

  it("stops when the last child settles, and starts afresh with the next", async () => {
    const w = world({ oneShots: ["a"] });
    const watch = watchOver(w);
    watch.nextDue();
    advance(CHILD_WATCH_MS);
    await watch.repair();
    expect(watch.nextDue()! - now).toBe(2 * CHILD_WATCH_MS);
    w.oneShots = [];
    expect(watch.nextDue()).toBeUndefined();
    w.continuables = ["c"];
    expect(watch.nextDue()).toBe(now + CHILD_WATCH_MS);
  });

  it("arms the object's alarm when a child starts outside a pass, keeping an earlier look", async () => {
    const w = world();
    const watch = watchOver(w);
    watch.started();
    await Promise.resolve();
    await Promise.resolve();
    expect(w.armed).toEqual([now + CHILD_WATCH_MS]);
    advance(5_000);
    watch.started(); // a second start keeps the first look's time
    await Promise.resolve();
    await Promise.resolve();
    expect(w.armed).toEqual([now - 5_000 + CHILD_WATCH_MS, now - 5_000 + CHILD_WATCH_MS]);
  });
});
