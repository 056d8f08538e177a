import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SessionObject } from "../../durable-objects/session/session-object";
import type { ChildInit } from "../../src/contract/child-init";
import { type ChildEntry, preOrder } from "../../src/core/listing";
import { api, createSession, expectError, startChild, startOneShot } from "../support/api";
import { hold } from "../support/faults";
import { allEvents, count, ofType, settledTimes, waitForEvents } from "../support/logs";
import { activationOf, sqlRows, stub } from "../support/objects";
import { script } from "../support/scripts";

/**
 * Contract section 10, scenarios 59-65 (discovery: listChildren / listDescendants), on Durable
 * Objects over `GET /v1/sessions/:id/children` and `/descendants`. The parent's `children` table is
 * the cached rung (id, createdAt); each child object's `entry()` is the cold rung (identity from
 * its descriptors, last wins). Broken children are made with `runInDurableObject` (edited
 * descriptors, a removed header row, a renamed table, rows naming objects that never existed).
 * Storage is shared by the whole file: every test uses fresh sessions.
 */

type Entry = Record<string, any>;

async function listing(route: "children" | "descendants", id: string, token?: string): Promise<Entry[]> {
  const res = await api("GET", `/v1/sessions/${id}/${route}`, token === undefined ? {} : { token });
  if (res.status !== 200) throw new Error(`${route} of ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  expect(Object.keys(res.body)).toEqual(["entries"]);
  return res.body.entries;
}

const children = (id: string, token?: string) => listing("children", id, token);
const descendants = (id: string, token?: string) => listing("descendants", id, token);

/** A UUID whose first hex digit is `first` (to control id order among equal createdAt). */
function idStartingWith(first: string): string {
  return first + crypto.randomUUID().slice(1);
}

/** Starts a one-shot child over HTTP and waits until its parent recorded the result. */
async function oneShot(parent: string, body: Record<string, unknown> = {}): Promise<string> {
  const { runId, id } = await startOneShot(parent, { prompt: "hi", ...body });
  const res = await api("GET", `/v1/sessions/${parent}/runs/${runId}?wait=15000`);
  expect(res.body.state).toBe("settled");
  return id;
}

/** Starts a continuable child over HTTP and waits until its epoch settled. */
async function continuable(
  parent: string,
  label: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const { childId } = await startChild(parent, { prompt: "hi", label, ...body });
  await settledTimes(parent, childId);
  return childId;
}

/** Drops the object's in-memory state (cached header, next seq); SQLite survives. */
async function dropMemory(id: string): Promise<void> {
  await evictDurableObject(stub(id));
}

/** Sets the `created_at` of rows of a parent's children table (the cached rung's createdAt). */
async function setCreatedAt(parent: string, times: Record<string, number>): Promise<void> {
  for (const [childId, at] of Object.entries(times))
    await sqlRows(parent, "UPDATE children SET created_at = ? WHERE child_id = ?", at, childId);
}

/** Inserts a row into a parent's children table (the object it names need not exist). */
async function insertChildRow(
  parent: string,
  childId: string,
  createdAt: number,
  label: string | null = null,
) {
  await sqlRows(
    parent,
    "INSERT INTO children (child_id, provider, mode, label, created_at, state) VALUES (?, 'spawn', 'one-shot', ?, ?, 'released')",
    childId,
    label,
    createdAt,
  );
}

/** Rewrites the payload of every descriptor event of a child's log. */
async function rewriteDescriptor(id: string, data: unknown): Promise<void> {
  const rows = await sqlRows(
    id,
    "UPDATE events SET data = ? WHERE type = 'subagent/descriptor' RETURNING seq",
    JSON.stringify(data),
  );
  expect(rows.length).toBeGreaterThan(0);
}

/** Appends a descriptor event to a (settled) child's log, then evicts it (its next-seq cache). */
async function appendDescriptor(id: string, data: unknown): Promise<void> {
  await sqlRows(
    id,
    "INSERT INTO events (seq, type, at, data) VALUES ((SELECT max(seq) + 1 FROM events), 'subagent/descriptor', ?, ?)",
    Date.now(),
    JSON.stringify(data),
  );
  await dropMemory(id);
}

const descriptor = (extra: Record<string, unknown> = {}) => ({
  version: 2,
  mode: "one-shot",
  provider: "spawn",
  ...extra,
});

/** A settled one-shot row as listed. */
function oneShotRow(id: string, createdAt: number, extra: Record<string, unknown> = {}): Entry {
  return {
    kind: "child",
    id,
    activity: "inactive",
    hasChildren: false,
    mode: "one-shot",
    status: "idle",
    provider: "spawn",
    createdAt,
    ...extra,
  };
}

function diagnostic(id: string, reason: string, createdAt: number): Entry {
  return { kind: "diagnostic", id, reason, createdAt };
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
    proto[method] = function (this: { ctx: DurableObjectState }, ...args: unknown[]) {
      calls.push({ method, object: this.ctx.id.toString() });
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

/** The token hash a child of `root`'s tree carries (for children created with `init`). */
async function tokenHashOf(root: string): Promise<string | null> {
  const [row] = await sqlRows(root, "SELECT body FROM header");
  return (JSON.parse(row!.body as string) as { tokenHash: string | null }).tokenHash;
}

/**
 * Creates a real one-shot child session with the runtime's own `init` (header naming `parent`,
 * descriptor, prompt), bypassing the parent's checks (the depth cap): the way to build chains
 * deeper than MAX_DEPTH_CAP. The caller adds the parent's children row.
 */
async function initChild(
  id: string,
  parent: string,
  lineage: string[],
  depth: number,
  tokenHash: string | null,
  label: string,
): Promise<void> {
  const spec: ChildInit = {
    v: 1,
    id,
    parentSession: parent,
    runId: crypto.randomUUID(),
    provider: "spawn",
    lineage,
    tokenHash,
    delegationDepth: depth,
    mode: "one-shot",
    label,
    descriptor: { version: 2, mode: "one-shot", provider: "spawn", label },
    options: { model: "scripted" },
    prompt: [{ type: "text", text: "leaf" }],
  };
  const answer = await stub(id).init(spec);
  expect(answer).toEqual({ ok: true, value: { id } });
}

describe("contract 10, discovery (scenarios 59-65)", () => {
  it("59. (DO preconditions) a session with no children lists [] on both routes; a session token lists its own tree (descendants included) and gets 404 for another tree; no token is 401", async () => {
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
    const child = await oneShot(parent.id, { label: "kid" });
    const grand = await oneShot(child, { label: "grandkid" });
    const otherChild = await oneShot(other.id);

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

  it("60. rows are ordered by createdAt then id (the parent's table); one-shot rows carry a label only if supplied; a malformed descriptor (or a later malformed one) is a `corrupt` diagnostic while healthy siblings are complete; of two valid descriptors the last is listed", async () => {
    const parent = await createSession();
    const labelled = await oneShot(parent.id, { label: "alpha", childId: idStartingWith("f") });
    const unlabelled = await oneShot(parent.id, { childId: idStartingWith("0") });
    const cont = await continuable(parent.id, "gamma");
    const badField = await oneShot(parent.id, { label: "bad-field" });
    const badMode = await oneShot(parent.id);
    const notObject = await oneShot(parent.id);
    const twice = await oneShot(parent.id, { label: "first" });
    const laterBad = await oneShot(parent.id, { label: "was fine" });

    await rewriteDescriptor(badField, descriptor({ label: "x", extra: 1 }));
    await rewriteDescriptor(badMode, descriptor({ mode: "sideways" }));
    await rewriteDescriptor(notObject, ["not", "an", "object"]);
    await appendDescriptor(twice, { version: 2, mode: "continuable", provider: "fork", label: "second" });
    await appendDescriptor(laterBad, descriptor({ toolFilter: {} }));

    // createdAt from the parent's table, deliberately not the creation order; `labelled` (id f...)
    // and `unlabelled` (id 0...) tie, so the id decides: `unlabelled` first although started later
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

  it("60. a settled child whose last descriptor has an unknown version, or that has no descriptor at all, is a `corrupt` diagnostic, not a missing row", async () => {
    const parent = await createSession();
    const healthy = await oneShot(parent.id, { label: "ok" });
    const future = await oneShot(parent.id, { label: "v2" });
    const none = await oneShot(parent.id);
    await appendDescriptor(future, { version: 3, mode: "one-shot", provider: "spawn", label: "v3" });
    await sqlRows(none, "DELETE FROM events WHERE type = 'subagent/descriptor'");
    await dropMemory(none);
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

  it("61. an unreachable child (its object never existed, its header row is gone, or it throws while answering) is an `unavailable` diagnostic and a child whose header names another parent is `corrupt`; healthy siblings stay complete, and each lists normally once repaired", async () => {
    const parent = await createSession();
    const elsewhere = await createSession();
    const healthy = await oneShot(parent.id, { label: "healthy" });
    const headless = await oneShot(parent.id, { label: "headless" });
    const throwing = await oneShot(parent.id, { label: "throwing" });
    const cont = await continuable(parent.id, "steady");
    const ghost = crypto.randomUUID();
    const foreign = await oneShot(elsewhere.id, { label: "foreign" });
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
    await dropMemory(headless);
    await sqlRows(throwing, "ALTER TABLE children RENAME TO children_moved");

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
    await dropMemory(headless);
    await sqlRows(throwing, "ALTER TABLE children_moved RENAME TO children");
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

  it("61. listDescendants keeps an unreachable child as a positioned diagnostic and still lists its healthy siblings", async () => {
    const parent = await createSession();
    const first = await oneShot(parent.id, { label: "first" });
    const headless = await oneShot(parent.id, { label: "headless" });
    const throwing = await oneShot(parent.id, { label: "throwing" });
    const last = await oneShot(parent.id, { label: "last" });
    await setCreatedAt(parent.id, { [first]: 1, [headless]: 2, [throwing]: 3, [last]: 4 });
    await sqlRows(headless, "DELETE FROM header");
    await dropMemory(headless);
    await sqlRows(throwing, "ALTER TABLE children RENAME TO children_moved");
    const res = await api("GET", `/v1/sessions/${parent.id}/descendants`);
    expect({
      status: res.status,
      ids: res.body?.entries?.map((e: Entry) => [e.kind, e.id, e.parentId, e.depth]),
    }).toEqual({
      status: 200,
      ids: [
        ["child", first, parent.id, 1],
        ["diagnostic", headless, parent.id, 1],
        ["diagnostic", throwing, parent.id, 1],
        ["child", last, parent.id, 1],
      ],
    });
  });

  it("62. the cached rung: the parent's children table supplies each row's id and createdAt (not the child's header); each child object is asked exactly once per listing, nothing is memoized across listings", async () => {
    const parent = await createSession();
    const a = await oneShot(parent.id, { label: "a" });
    const b = await oneShot(parent.id, { label: "b" });
    const c = await continuable(parent.id, "c");
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

  it("63. grandchildren only contribute `hasChildren` to their parent's row in listChildren (never asked, never rows); a diagnostic grandchild counts; in listDescendants each descendant is asked once and leaves are not asked for children", async () => {
    const parent = await createSession();
    const withKids = await continuable(parent.id, "with kids");
    const grand1 = await oneShot(withKids, { label: "g1" });
    const grand2 = await continuable(withKids, "g2");
    const leaf = await oneShot(parent.id, { label: "leaf" });
    const withGhost = await oneShot(parent.id, { label: "with ghost" });
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

  it("64. (no abort signals over HTTP; adapted) a listing during a child's running turn answers at once and consistently: the running child is `running`, settled siblings are unchanged, nothing is appended or woken by listing", async () => {
    const parent = await createSession();
    const settledCont = await continuable(parent.id, "resting");
    const settledOne = await oneShot(parent.id, { label: "done" });
    const runnerId = crypto.randomUUID();
    const oneShotId = crypto.randomUUID();
    const runnerGate = hold(runnerId, "before-model");
    const oneShotGate = hold(oneShotId, "before-model");
    try {
      await startChild(parent.id, { prompt: script({ say: "finally" }), label: "runner", childId: runnerId });
      await startOneShot(parent.id, { prompt: "slow", label: "busy", childId: oneShotId });
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

  it("65. listDescendants is a stable pre-order with parentId/depth over a 3-level tree with siblings; it walks through one-shot children; diagnostics keep their position and their subtrees are walked", async () => {
    const root = await createSession();
    const a = await continuable(root.id, "a");
    const a1 = await oneShot(a, { label: "a1" });
    const a1x = await continuable(a1, "a1x");
    const a2 = await continuable(a, "a2");
    const ghost = crypto.randomUUID();
    await insertChildRow(a, ghost, 1500);
    const b = await oneShot(root.id, { label: "b" });
    const b1 = await oneShot(b, { label: "b1" }); // below a one-shot child
    const b1y = await oneShot(b1, { label: "b1y" });
    const c = await oneShot(root.id, { label: "c" });
    const c1 = await oneShot(c, { label: "c1" });
    await rewriteDescriptor(c, descriptor({ mode: "nonsense" })); // corrupt, with a healthy child
    // sibling order from the parents' tables, not the creation order
    await setCreatedAt(root.id, { [b]: 1000, [a]: 2000, [c]: 3000 });
    await setCreatedAt(a, { [a1]: 1000, [a2]: 2000 });

    const all = await descendants(root.id);
    expect(all.map((e) => [e.kind, e.id, e.parentId, e.depth, e.label ?? e.reason])).toEqual([
      ["child", b, root.id, 1, "b"],
      ["child", b1, b, 2, "b1"],
      ["child", b1y, b1, 3, "b1y"],
      ["child", a, root.id, 1, "a"],
      ["child", a1, a, 2, "a1"],
      ["child", a1x, a1, 3, "a1x"],
      ["diagnostic", ghost, a, 2, "unavailable"],
      ["child", a2, a, 2, "a2"],
      ["diagnostic", c, root.id, 1, "corrupt"],
      ["child", c1, c, 2, "c1"],
    ]);
    // each row is its parent's listChildren row plus parentId and depth
    for (const node of [root.id, a, a1, b, b1, c]) {
      const rows = await children(node);
      const fromWalk = all.filter((e) => e.parentId === node);
      expect(fromWalk.map(({ parentId: _p, depth: _d, ...row }) => row)).toEqual(rows);
    }
    // the mode of the walked-through rows: one-shot and continuable alike
    expect(all.filter((e) => e.kind === "child").map((e) => e.mode)).toEqual([
      "one-shot",
      "one-shot",
      "one-shot",
      "continuable",
      "one-shot",
      "continuable",
      "continuable",
      "one-shot",
    ]);
    // stable: the same answer again; and a subtree listed from its own root has depths from it
    expect(await descendants(root.id)).toEqual(all);
    expect((await descendants(a)).map((e) => [e.id, e.parentId, e.depth])).toEqual([
      [a1, a, 1],
      [a1x, a1, 2],
      [ghost, a, 1],
      [a2, a, 1],
    ]);
    expect((await descendants(root.id, root.token)).map((e) => e.id)).toEqual(all.map((e) => e.id));
  });

  it("65. (cycle) a children table edited to name the root, an ancestor or the session itself never makes the walk revisit anything: the root is never a row, every id appears once, the tree keeps its shape", async () => {
    const root = await createSession();
    const a = await oneShot(root.id, { label: "a" });
    const a1 = await oneShot(a, { label: "a1" });
    const a1x = await oneShot(a1, { label: "a1x" });
    const b = await oneShot(root.id, { label: "b" });
    await setCreatedAt(root.id, { [a]: 1, [b]: 2 });
    const before = await descendants(root.id);
    expect(before.map((e) => [e.id, e.parentId, e.depth])).toEqual([
      [a, root.id, 1],
      [a1, a, 2],
      [a1x, a1, 3],
      [b, root.id, 1],
    ]);

    await insertChildRow(a1x, root.id, 1);
    await insertChildRow(a1x, a, 2);
    await insertChildRow(a1x, a1x, 3);
    // from the cyclic node itself: each named session's header names another parent
    expect(await children(a1x)).toEqual([
      diagnostic(root.id, "corrupt", 1),
      diagnostic(a, "corrupt", 2),
      diagnostic(a1x, "corrupt", 3),
    ]);

    const after = await descendants(root.id);
    expect(after).toEqual(before.map((e) => (e.id === a1x ? { ...e, hasChildren: true } : e)));
    expect(after.some((e) => e.id === root.id)).toBe(false);
    expect(await descendants(root.id)).toEqual(after);

    // walked from the cyclic node: terminates, never lists its own root, no id twice
    const fromCycle = await descendants(a1x);
    const ids = fromCycle.map((e) => e.id);
    expect(ids).not.toContain(a1x);
    expect(new Set(ids).size).toBe(ids.length);
    expect(fromCycle[0]).toEqual({ ...diagnostic(root.id, "corrupt", 1), parentId: a1x, depth: 1 });
  });

  it("65. a children row naming a session of another branch does not move it: it stays a `child` at its header's parent and depth, the stray row is a `corrupt` diagnostic", async () => {
    const root = await createSession();
    const a = await oneShot(root.id, { label: "a" });
    const a1 = await oneShot(a, { label: "a1" });
    const b = await oneShot(root.id, { label: "b" });
    await setCreatedAt(root.id, { [a]: 1, [b]: 2 });
    await insertChildRow(a1, b, 1); // a1's table also names b, whose header names the root
    const all = await descendants(root.id);
    expect(all.filter((e) => e.id === b)).toEqual([
      { kind: "diagnostic", id: b, reason: "corrupt", createdAt: 1, parentId: a1, depth: 3 },
      { ...oneShotRow(b, 2, { label: "b" }), parentId: root.id, depth: 1 },
    ]);
  });

  it("65. (deep chain) a 40-level chain of real sessions (built past MAX_DEPTH_CAP with init and table rows) lists in order with depth 1..40 and the right parents, also with a cycle at its bottom; the pure walk handles 10 000 levels", async () => {
    const LEVELS = 40;
    const root = await createSession();
    const tokenHash = await tokenHashOf(root.id);
    const chain: string[] = [];
    for (let depth = 1; depth <= LEVELS; depth++) {
      const id = crypto.randomUUID();
      const parent = chain.at(-1) ?? root.id;
      await initChild(id, parent, [root.id, ...chain], depth, tokenHash, `level-${depth}`);
      await insertChildRow(parent, id, depth, `level-${depth}`);
      chain.push(id);
    }
    const expected = chain.map((id, i) => [
      "child",
      id,
      i === 0 ? root.id : chain[i - 1],
      i + 1,
      `level-${i + 1}`,
      i < LEVELS - 1,
    ]);
    const shape = (entries: Entry[]) =>
      entries.map((e) => [e.kind, e.id, e.parentId, e.depth, e.label, e.hasChildren]);
    expect(shape(await descendants(root.id))).toEqual(expected);
    expect(shape(await descendants(root.id, root.token))).toEqual(expected);
    // from the middle: depths count from the listed session
    expect((await descendants(chain[9]!)).map((e) => [e.id, e.depth])).toEqual(
      chain.slice(10).map((id, i) => [id, i + 1]),
    );
    expect((await children(chain[19]!)).map((e) => e.id)).toEqual([chain[20]]);

    // the bottom names the root and a middle link: still 40 rows plus nothing revisited
    const bottom = chain.at(-1)!;
    await insertChildRow(bottom, root.id, 1);
    await insertChildRow(bottom, chain[19]!, 2);
    const cyclic = await descendants(root.id);
    expect(cyclic.map((e) => e.id)).toEqual(chain);
    expect(cyclic.at(-1)).toMatchObject({ id: bottom, hasChildren: true, depth: LEVELS });

    // the pure pre-order walk (src/core/listing.ts) is iterative: 10 000 levels
    const DEEP = 10_000;
    const node = (i: number): ChildEntry => ({
      kind: "child",
      id: `n${i}`,
      activity: "inactive",
      hasChildren: i < DEEP,
      mode: "one-shot",
      status: "idle",
      provider: "spawn",
      createdAt: i,
    });
    const walked = await preOrder(
      "n0",
      async (id) => {
        const i = Number(id.slice(1));
        return i < DEEP ? [node(i + 1), ...(i === DEEP - 1 ? [node(0)] : [])] : [];
      },
      (e) => e.kind === "diagnostic" || e.hasChildren,
    );
    expect(walked).toHaveLength(DEEP);
    expect(walked[0]).toMatchObject({ id: "n1", parentId: "n0", depth: 1 });
    expect(walked.at(-1)).toMatchObject({ id: `n${DEEP}`, parentId: `n${DEEP - 1}`, depth: DEEP });
  });
});
