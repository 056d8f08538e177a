import { describe, expect, it } from "vitest";
import type { ChildEntry } from "../../../src/contract/listing";
import { preOrder } from "../../../src/core/descendants";
import { api, createSession } from "../../support/api";
import {
  breakChildrenTable,
  children,
  descendants,
  descriptor,
  diagnostic,
  type Entry,
  initChild,
  insertChildRow,
  oneShotRow,
  rewriteDescriptor,
  setCreatedAt,
  settledContinuable,
  settledOneShot,
  tokenHashOf,
} from "../../support/child-listings";
import { evict, sqlRows } from "../../support/objects";

/**
 * `GET /v1/sessions/:id/descendants` (semantics.md §9.3): a stable pre-order with `parentId` and
 * `depth` that walks through one-shot children and diagnostic rows, never visits an id twice, and
 * handles cycles and deep chains. Every test uses fresh sessions.
 */

describe("listing a session's descendants (semantics.md §9.3)", () => {
  it("the descendants listing keeps an unreachable child as a positioned diagnostic and still lists its healthy siblings", async () => {
    const parent = await createSession();
    const first = await settledOneShot(parent.id, { label: "first" });
    const headless = await settledOneShot(parent.id, { label: "headless" });
    const throwing = await settledOneShot(parent.id, { label: "throwing" });
    const last = await settledOneShot(parent.id, { label: "last" });
    await setCreatedAt(parent.id, { [first]: 1, [headless]: 2, [throwing]: 3, [last]: 4 });
    await sqlRows(headless, "DELETE FROM header");
    await evict(headless);
    await breakChildrenTable(throwing);
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

  it("the descendants listing is a stable pre-order with parentId/depth over a 3-level tree with siblings; it walks through one-shot children; diagnostics keep their position and their subtrees are walked", async () => {
    const root = await createSession();
    const a = await settledContinuable(root.id, "a");
    const a1 = await settledOneShot(a, { label: "a1" });
    const a1x = await settledContinuable(a1, "a1x");
    const a2 = await settledContinuable(a, "a2");
    const ghost = crypto.randomUUID();
    await insertChildRow(a, ghost, 1500);
    const b = await settledOneShot(root.id, { label: "b" });
    const b1 = await settledOneShot(b, { label: "b1" }); // below a one-shot child
    const b1y = await settledOneShot(b1, { label: "b1y" });
    const c = await settledOneShot(root.id, { label: "c" });
    const c1 = await settledOneShot(c, { label: "c1" });
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
    // each row is its parent's row in the children listing plus parentId and depth
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

  it("a children table edited to name the root, an ancestor or the session itself never makes the walk revisit anything: the root is never a row, every id appears once, the tree keeps its shape", async () => {
    const root = await createSession();
    const a = await settledOneShot(root.id, { label: "a" });
    const a1 = await settledOneShot(a, { label: "a1" });
    const a1x = await settledOneShot(a1, { label: "a1x" });
    const b = await settledOneShot(root.id, { label: "b" });
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

  it("a children row naming a session of another branch does not move it: it stays a `child` at its header's parent and depth, the stray row is a `corrupt` diagnostic", async () => {
    const root = await createSession();
    const a = await settledOneShot(root.id, { label: "a" });
    const a1 = await settledOneShot(a, { label: "a1" });
    const b = await settledOneShot(root.id, { label: "b" });
    await setCreatedAt(root.id, { [a]: 1, [b]: 2 });
    await insertChildRow(a1, b, 1); // a1's table also names b, whose header names the root
    const all = await descendants(root.id);
    expect(all.filter((e) => e.id === b)).toEqual([
      { kind: "diagnostic", id: b, reason: "corrupt", createdAt: 1, parentId: a1, depth: 3 },
      { ...oneShotRow(b, 2, { label: "b" }), parentId: root.id, depth: 1 },
    ]);
  });

  it("a 40-level chain of real sessions (built past MAX_DEPTH_CAP with init and table rows) lists in order with depth 1..40 and the right parents, also with a cycle at its bottom; the pure walk handles 10 000 levels", async () => {
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

    // the pure pre-order walk (src/core/descendants.ts) is iterative: 10 000 levels
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
