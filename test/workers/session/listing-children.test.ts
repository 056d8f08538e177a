import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ObjectHost } from "../../../durable-objects/host/port";
import { SessionObject } from "../../../durable-objects/session/session-object";
import { api, createSession, expectError, startChild, startOneShot } from "../../support/api";
import { hold } from "../../support/faults";
import { reservedId } from "../../support/ids";
import {
  appendDescriptor,
  breakChildrenTable,
  children,
  descendants,
  descriptor,
  diagnostic,
  type Entry,
  initChild,
  insertChildRow,
  oneShotRow,
  restoreChildrenTable,
  rewriteDescriptor,
  setCreatedAt,
  settledContinuable,
  settledOneShot,
  tokenHashOf,
} from "../../support/child-listings";
import { allEvents, count, ofType, settledTimes, waitForEvents } from "../../support/logs";
import { activationOf, evict, sqlRows } from "../../support/objects";
import { script } from "../../support/scripts";

/**
 * `GET /v1/sessions/:id/children` (semantics.md §9.1, §9.2): the parent's `children` table gives
 * each row's id and createdAt, each child object is asked once per listing for the rest, and a
 * child that cannot be listed is a diagnostic in its position while its siblings stay complete.
 * Broken children are made with `runInDurableObject` (edited descriptors, a removed header row, a
 * renamed table, rows naming objects that never existed). Every test uses fresh sessions.
 */

/**
 * Two `childId`s to reserve under `parent`, ordered so that the children's ids (derived from
 * parent and `childId`) sort low then high: to control id order among equal createdAt.
 */
function childIdsInIdOrder(parent: string): [low: string, high: string] {
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
  return reservedId(parent, a) < reservedId(parent, b) ? [a, b] : [b, a];
}

/** The `created_at` of each row of a parent's children table. */
async function rowTimes(parent: string): Promise<Map<string, number>> {
  const rows = await sqlRows(parent, "SELECT child_id, created_at FROM children");
  return new Map(rows.map((r) => [r.child_id as string, r.created_at as number]));
}

function sortedByCreatedThenId(rows: Entry[]): Entry[] {
  return [...rows].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Counts the listing RPCs each session object answers (`entry`: asked for its own row;
 * `childEntries`: asked for its children during a descendants walk) by wrapping the methods on
 * the class prototype the objects of this isolate share. Restore it in `finally`.
 */
function countListingCalls() {
  const proto = SessionObject.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const methods = ["entry", "childEntries"] as const;
  const originals = new Map(methods.map((m) => [m, proto[m]!]));
  const calls: { method: (typeof methods)[number]; object: string }[] = [];
  for (const method of methods) {
    const original = originals.get(method)!;
    proto[method] = function (this: { host: ObjectHost }, ...args: unknown[]) {
      calls.push({ method, object: this.host.id });
      return original.apply(this, args);
    };
  }
  const objectId = (id: string) => env.SESSIONS.idFromName(id).toString();
  return {
    of: (method: (typeof methods)[number], id: string) =>
      calls.filter((c) => c.method === method && c.object === objectId(id)).length,
    total: (method: (typeof methods)[number]) => calls.filter((c) => c.method === method).length,
    reset: () => {
      calls.length = 0;
    },
    restore: () => {
      for (const method of methods) proto[method] = originals.get(method)!;
    },
  };
}

describe("listing a session's children (semantics.md §9.1, §9.2)", () => {
  it("a session with no children lists [] on both routes; a session token lists its own tree (descendants included) and gets 404 for another tree; no token is 401", async () => {
    const lonely = await createSession();
    for (const route of ["children", "descendants"] as const) {
      const asAdmin = await api("GET", `/v1/sessions/${lonely.id}/${route}`);
      expect({ status: asAdmin.status, body: asAdmin.body }).toEqual({ status: 200, body: { entries: [] } });
      const asItself = await api("GET", `/v1/sessions/${lonely.id}/${route}`, { token: lonely.token });
      expect({ status: asItself.status, body: asItself.body }).toEqual({
        status: 200,
        body: { entries: [] },
      });
    }

    const parent = await createSession();
    const other = await createSession();
    const child = await settledOneShot(parent.id, { label: "kid" });
    const grand = await settledOneShot(child, { label: "grandkid" });
    const otherChild = await settledOneShot(other.id);

    // the parent's token reads its own tree, and its descendants' listings
    expect(
      (await children(parent.id, parent.token)).map((e) => [e.kind, e.id, e.label, e.hasChildren]),
    ).toEqual([["child", child, "kid", true]]);
    expect((await descendants(parent.id, parent.token)).map((e) => [e.id, e.parentId, e.depth])).toEqual([
      [child, parent.id, 1],
      [grand, child, 2],
    ]);
    expect((await children(child, parent.token)).map((e) => [e.id, e.label])).toEqual([[grand, "grandkid"]]);
    expect((await descendants(child, parent.token)).map((e) => [e.id, e.parentId, e.depth])).toEqual([
      [grand, child, 1],
    ]);
    expect(await children(grand, parent.token)).toEqual([]);
    // the admin sees the same rows
    expect(await children(parent.id)).toEqual(await children(parent.id, parent.token));
    expect(await descendants(parent.id)).toEqual(await descendants(parent.id, parent.token));

    // another tree: 404, both ways, for roots and children alike (no enumeration)
    for (const route of ["children", "descendants"]) {
      for (const [target, token] of [
        [other.id, parent.token],
        [otherChild, parent.token],
        [parent.id, other.token],
        [child, other.token],
        [grand, lonely.token],
        [crypto.randomUUID(), parent.token],
      ] as const) {
        expectError(await api("GET", `/v1/sessions/${target}/${route}`, { token }), 404, "NOT_FOUND");
      }
      expectError(await api("GET", `/v1/sessions/${crypto.randomUUID()}/${route}`), 404, "NOT_FOUND");
      expectError(
        await api("GET", `/v1/sessions/${parent.id}/${route}`, { token: null }),
        401,
        "UNAUTHENTICATED",
      );
      expectError(
        await api("GET", `/v1/sessions/${parent.id}/${route}`, { token: "nope" }),
        401,
        "UNAUTHENTICATED",
      );
    }
    // listings are read-only: the trees are unchanged
    expect((await children(other.id)).map((e) => e.id)).toEqual([otherChild]);
    expect(await children(lonely.id)).toEqual([]);
  });

  it("rows are ordered by createdAt then id (the parent's table); one-shot rows carry a label only if supplied; a malformed descriptor (or a later malformed one) is a `corrupt` diagnostic while healthy siblings are complete; of two valid descriptors the last is listed", async () => {
    const parent = await createSession();
    const [low, high] = childIdsInIdOrder(parent.id);
    const labelled = await settledOneShot(parent.id, { label: "alpha", childId: high });
    const unlabelled = await settledOneShot(parent.id, { childId: low });
    const cont = await settledContinuable(parent.id, "gamma");
    const badField = await settledOneShot(parent.id, { label: "bad-field" });
    const badMode = await settledOneShot(parent.id);
    const notObject = await settledOneShot(parent.id);
    const twice = await settledOneShot(parent.id, { label: "first" });
    const laterBad = await settledOneShot(parent.id, { label: "was fine" });

    await rewriteDescriptor(badField, descriptor({ label: "x", extra: 1 }));
    await rewriteDescriptor(badMode, descriptor({ mode: "sideways" }));
    await rewriteDescriptor(notObject, ["not", "an", "object"]);
    await appendDescriptor(twice, { version: 2, mode: "continuable", provider: "fork", label: "second" });
    await appendDescriptor(laterBad, descriptor({ toolFilter: {} }));

    // createdAt from the parent's table, deliberately not the creation order; `labelled` (the
    // higher id) and `unlabelled` (the lower) tie, so the id decides: `unlabelled` first although
    // started later
    const base = 1_700_000_000_000;
    await setCreatedAt(parent.id, {
      [laterBad]: base + 1,
      [labelled]: base + 5,
      [unlabelled]: base + 5,
      [badField]: base + 3,
      [cont]: base + 2,
      [twice]: base + 9,
      [badMode]: base + 7,
      [notObject]: base + 8,
    });

    const listed = await children(parent.id);
    expect(listed).toEqual([
      diagnostic(laterBad, "corrupt", base + 1),
      {
        kind: "child",
        id: cont,
        activity: "inactive",
        hasChildren: false,
        mode: "continuable",
        label: "gamma",
        status: "idle",
        provider: "spawn",
        createdAt: base + 2,
      },
      diagnostic(badField, "corrupt", base + 3),
      oneShotRow(unlabelled, base + 5),
      oneShotRow(labelled, base + 5, { label: "alpha" }),
      diagnostic(badMode, "corrupt", base + 7),
      diagnostic(notObject, "corrupt", base + 8),
      { ...oneShotRow(twice, base + 9), mode: "continuable", label: "second", provider: "fork" },
    ]);
    expect("label" in listed[3]!).toBe(false);
    expect(listed).toEqual(sortedByCreatedThenId(listed));
    // the descendants route lists the same rows (no grandchildren here), each at depth 1
    expect(await descendants(parent.id)).toEqual(
      listed.map((e) => ({ ...e, parentId: parent.id, depth: 1 })),
    );

    // repaired descriptors list normally on the next call (nothing is memoized)
    await rewriteDescriptor(badField, descriptor({ label: "repaired" }));
    expect((await children(parent.id)).find((e) => e.id === badField)).toEqual(
      oneShotRow(badField, base + 3, { label: "repaired" }),
    );
  });

  it("a settled child whose last descriptor has an unknown version, or that has no descriptor at all, is a `corrupt` diagnostic, not a missing row", async () => {
    const parent = await createSession();
    const healthy = await settledOneShot(parent.id, { label: "ok" });
    const future = await settledOneShot(parent.id, { label: "v2" });
    const none = await settledOneShot(parent.id);
    await appendDescriptor(future, { version: 3, mode: "one-shot", provider: "spawn", label: "v3" });
    await sqlRows(none, "DELETE FROM events WHERE type = 'subagent/descriptor'");
    await evict(none);
    const times = await rowTimes(parent.id);
    const listed = await children(parent.id);
    expect(sortedByCreatedThenId(listed)).toEqual(
      sortedByCreatedThenId([
        oneShotRow(healthy, times.get(healthy)!, { label: "ok" }),
        diagnostic(future, "corrupt", times.get(future)!),
        diagnostic(none, "corrupt", times.get(none)!),
      ]),
    );
  });

  it("an unreachable child (its object never existed, its header row is gone, or it throws while answering) is an `unavailable` diagnostic and a child whose header names another parent is `corrupt`; healthy siblings stay complete, and each lists normally once repaired", async () => {
    const parent = await createSession();
    const elsewhere = await createSession();
    const healthy = await settledOneShot(parent.id, { label: "healthy" });
    const headless = await settledOneShot(parent.id, { label: "headless" });
    const throwing = await settledOneShot(parent.id, { label: "throwing" });
    const cont = await settledContinuable(parent.id, "steady");
    const ghost = crypto.randomUUID();
    const foreign = await settledOneShot(elsewhere.id, { label: "foreign" });
    const base = 1_700_000_000_000;
    await insertChildRow(parent.id, ghost, base + 4, "ghost");
    await insertChildRow(parent.id, foreign, base + 5, "foreign");
    await setCreatedAt(parent.id, {
      [healthy]: base + 1,
      [headless]: base + 2,
      [throwing]: base + 3,
      [cont]: base + 6,
    });
    const healthyRows = [
      oneShotRow(healthy, base + 1, { label: "healthy" }),
      {
        kind: "child",
        id: cont,
        activity: "inactive",
        hasChildren: false,
        mode: "continuable",
        label: "steady",
        status: "idle",
        provider: "spawn",
        createdAt: base + 6,
      },
    ];

    // break two real children: one loses its header row, the other its children table (so its
    // `entry` throws); the ghost row names an object that was never created
    const [headerRow] = await sqlRows(headless, "SELECT body FROM header");
    await sqlRows(headless, "DELETE FROM header");
    await evict(headless);
    await breakChildrenTable(throwing);

    const broken = await children(parent.id);
    expect(broken).toEqual([
      healthyRows[0],
      diagnostic(headless, "unavailable", base + 2),
      diagnostic(throwing, "unavailable", base + 3),
      diagnostic(ghost, "unavailable", base + 4),
      diagnostic(foreign, "corrupt", base + 5),
      healthyRows[1],
    ]);
    // asking again gives the same answer (and the probes stored nothing in the ghost object)
    expect(await children(parent.id)).toEqual(broken);
    expectError(await api("GET", `/v1/sessions/${ghost}`), 404, "NOT_FOUND");
    // the foreign child still lists under its own parent
    expect((await children(elsewhere.id)).map((e) => [e.kind, e.id, e.label])).toEqual([
      ["child", foreign, "foreign"],
    ]);

    // repair: restore the header and the table, create the ghost as a real child of the parent
    await sqlRows(headless, "INSERT INTO header (id, body) VALUES (1, ?)", headerRow!.body as string);
    await evict(headless);
    await restoreChildrenTable(throwing);
    await initChild(ghost, parent.id, [parent.id], 1, await tokenHashOf(parent.id), "ghost now");
    await waitForEvents(ghost, (log) => count(log, "turn/end") === 1);
    const repaired = await children(parent.id);
    const ghostRow = repaired.find((e) => e.id === ghost);
    expect(ghostRow).toMatchObject({
      kind: "child",
      mode: "one-shot",
      label: "ghost now",
      createdAt: base + 4,
    });
    expect(repaired).toEqual([
      healthyRows[0],
      oneShotRow(headless, base + 2, { label: "headless" }),
      oneShotRow(throwing, base + 3, { label: "throwing" }),
      ghostRow,
      diagnostic(foreign, "corrupt", base + 5),
      healthyRows[1],
    ]);
  });

  it("the parent's children table supplies each row's id and createdAt (not the child's header); each child object is asked exactly once per listing, nothing is memoized across listings", async () => {
    const parent = await createSession();
    const a = await settledOneShot(parent.id, { label: "a" });
    const b = await settledOneShot(parent.id, { label: "b" });
    const c = await settledContinuable(parent.id, "c");
    const ghost = crypto.randomUUID();
    await insertChildRow(parent.id, ghost, 2500);
    await setCreatedAt(parent.id, { [c]: 1000, [a]: 2000, [b]: 3000 });
    const headerTimes = await Promise.all(
      [a, b, c].map(async (id) => (await api("GET", `/v1/sessions/${id}`)).body.createdAt),
    );
    for (const t of headerTimes) expect(t).toBeGreaterThan(1_000_000_000_000); // the headers keep their real times

    const calls = countListingCalls();
    try {
      const first = await children(parent.id);
      expect(first.map((e) => [e.kind, e.id, e.createdAt])).toEqual([
        ["child", c, 1000],
        ["child", a, 2000],
        ["diagnostic", ghost, 2500], // the never-created object answers without an id: the row's id
        ["child", b, 3000],
      ]);
      for (const id of [a, b, c, ghost]) expect(calls.of("entry", id)).toBe(1);
      expect(calls.total("entry")).toBe(4);
      expect(calls.total("childEntries")).toBe(0);
      expect(calls.of("entry", parent.id)).toBe(0);

      // a changed descriptor shows at once: the next listing asks every child again
      await rewriteDescriptor(a, descriptor({ label: "a, renamed" }));
      calls.reset();
      const second = await children(parent.id);
      expect(second.find((e) => e.id === a)).toEqual(oneShotRow(a, 2000, { label: "a, renamed" }));
      for (const id of [a, b, c, ghost]) expect(calls.of("entry", id)).toBe(1);
      expect(calls.total("entry")).toBe(4);

      // and a new row of the parent's table is a new row of the listing (at its table time)
      await setCreatedAt(parent.id, { [a]: 500 });
      calls.reset();
      expect((await children(parent.id)).map((e) => e.id)).toEqual([a, c, ghost, b]);
      expect(calls.total("entry")).toBe(4);
    } finally {
      calls.restore();
    }
    // a removed row is no longer a row (the table is the corpus)
    await sqlRows(parent.id, "DELETE FROM children WHERE child_id = ?", ghost);
    expect((await children(parent.id)).map((e) => e.id)).toEqual([a, c, b]);
  });

  it("grandchildren only contribute `hasChildren` to their parent's row in the children listing (never asked, never rows); a diagnostic grandchild counts; in the descendants listing each descendant is asked once and leaves are not asked for children", async () => {
    const parent = await createSession();
    const withKids = await settledContinuable(parent.id, "with kids");
    const grand1 = await settledOneShot(withKids, { label: "g1" });
    const grand2 = await settledContinuable(withKids, "g2");
    const leaf = await settledOneShot(parent.id, { label: "leaf" });
    const withGhost = await settledOneShot(parent.id, { label: "with ghost" });
    const ghostGrand = crypto.randomUUID();
    await insertChildRow(withGhost, ghostGrand, 1);
    await setCreatedAt(parent.id, { [withKids]: 1, [leaf]: 2, [withGhost]: 3 });
    await setCreatedAt(withKids, { [grand1]: 1, [grand2]: 2 });

    const calls = countListingCalls();
    try {
      const listed = await children(parent.id);
      expect(listed.map((e) => [e.id, e.hasChildren])).toEqual([
        [withKids, true],
        [leaf, false],
        [withGhost, true],
      ]);
      expect(listed.find((e) => e.id === withKids)).toMatchObject({
        kind: "child",
        mode: "continuable",
        label: "with kids",
      });
      for (const id of [withKids, leaf, withGhost]) expect(calls.of("entry", id)).toBe(1);
      for (const id of [grand1, grand2, ghostGrand]) expect(calls.of("entry", id)).toBe(0);
      expect(calls.total("entry")).toBe(3);
      expect(calls.total("childEntries")).toBe(0);

      calls.reset();
      const all = await descendants(parent.id);
      expect(all.map((e) => [e.kind, e.id, e.parentId, e.depth, e.hasChildren])).toEqual([
        ["child", withKids, parent.id, 1, true],
        ["child", grand1, withKids, 2, false],
        ["child", grand2, withKids, 2, false],
        ["child", leaf, parent.id, 1, false],
        ["child", withGhost, parent.id, 1, true],
        ["diagnostic", ghostGrand, withGhost, 2, undefined],
      ]);
      expect(all[5]).toEqual({ ...diagnostic(ghostGrand, "unavailable", 1), parentId: withGhost, depth: 2 });
      for (const id of [withKids, grand1, grand2, leaf, withGhost, ghostGrand])
        expect(calls.of("entry", id)).toBe(1);
      expect(calls.total("entry")).toBe(6);
      // asked for children: the rows with children and the diagnostic (its subtree is walked);
      // never a leaf
      expect(calls.of("childEntries", withKids)).toBe(1);
      expect(calls.of("childEntries", withGhost)).toBe(1);
      expect(calls.of("childEntries", ghostGrand)).toBe(1);
      for (const id of [grand1, grand2, leaf]) expect(calls.of("childEntries", id)).toBe(0);
      expect(calls.of("childEntries", parent.id)).toBe(0); // the root lists its own table
    } finally {
      calls.restore();
    }
    // the walk stored nothing in the ghost object
    expectError(await api("GET", `/v1/sessions/${ghostGrand}`), 404, "NOT_FOUND");
  });

  it("a listing during a child's running turn answers at once and consistently: the running child is `running`, settled siblings are unchanged, nothing is appended or woken by listing", async () => {
    const parent = await createSession();
    const settledCont = await settledContinuable(parent.id, "resting");
    const settledOne = await settledOneShot(parent.id, { label: "done" });
    const [runner, oneShot] = [crypto.randomUUID(), crypto.randomUUID()];
    const runnerId = reservedId(parent.id, runner);
    const oneShotId = reservedId(parent.id, oneShot);
    const runnerGate = hold(runnerId, "before-model");
    const oneShotGate = hold(oneShotId, "before-model");
    try {
      await startChild(parent.id, { prompt: script({ say: "finally" }), label: "runner", childId: runner });
      await startOneShot(parent.id, { prompt: "slow", label: "busy", childId: oneShot });
      await Promise.all([runnerGate.reached, oneShotGate.reached]);
      await setCreatedAt(parent.id, { [settledCont]: 1, [settledOne]: 2, [runnerId]: 3, [oneShotId]: 4 });

      const logsBefore = await Promise.all(
        [settledCont, settledOne, runnerId, oneShotId].map((id) => allEvents(id)),
      );
      const during = await children(parent.id);
      expect(during).toEqual([
        {
          kind: "child",
          id: settledCont,
          activity: "inactive",
          hasChildren: false,
          mode: "continuable",
          label: "resting",
          status: "idle",
          provider: "spawn",
          createdAt: 1,
        },
        oneShotRow(settledOne, 2, { label: "done" }),
        {
          kind: "child",
          id: runnerId,
          activity: "running",
          hasChildren: false,
          mode: "continuable",
          label: "runner",
          status: "running",
          provider: "spawn",
          createdAt: 3,
        },
        oneShotRow(oneShotId, 4, { label: "busy", activity: "running", status: "running" }),
      ]);
      expect(await descendants(parent.id)).toEqual(
        during.map((e) => ({ ...e, parentId: parent.id, depth: 1 })),
      );
      // read-only: no log grew, the held turns are still before their model call, the settled
      // continuable child was not woken (no activation, no new turn)
      const logsAfter = await Promise.all(
        [settledCont, settledOne, runnerId, oneShotId].map((id) => allEvents(id)),
      );
      expect(logsAfter).toEqual(logsBefore);
      expect(runnerGate.count("after-model")).toBe(0);
      expect(await activationOf(settledCont)).toEqual([]);
      expect(count(logsAfter[0]!, "turn/start")).toBe(1);
    } finally {
      runnerGate.remove();
      oneShotGate.remove();
    }
    await settledTimes(parent.id, runnerId);
    await waitForEvents(parent.id, (log) => ofType(log, "subagent/end").some((e) => e.data.id === oneShotId));
    const after = await children(parent.id);
    expect(after.map((e) => [e.id, e.activity, e.status])).toEqual([
      [settledCont, "inactive", "idle"],
      [settledOne, "inactive", "idle"],
      [runnerId, "inactive", "idle"],
      [oneShotId, "inactive", "idle"],
    ]);
  });
});
