import { describe, expect, it } from "vitest";
import { ReadMemo } from "../../../durable-objects/store/read-memo";

/** One memoized question whose query counts how often it was really asked. */
function question<T>(memo: ReadMemo, key: string, answer: () => T, empty: T) {
  const counted = {
    asked: 0,
    read: () =>
      memo.read(
        key,
        () => {
          counted.asked++;
          return answer();
        },
        empty,
      ),
  };
  return counted;
}

/** The stores' read memo: an answer is reused until the store's next write. */
describe("a store's read memo", () => {
  it("answers from memory until the next write, then asks again", () => {
    const memo = new ReadMemo();
    let rows = ["a"];
    const pending = question(memo, "pending", () => [...rows], [] as string[]);
    expect(pending.read()).toEqual(["a"]);
    expect(pending.read()).toEqual(["a"]);
    expect(pending.asked).toBe(1);
    rows = ["a", "b"];
    memo.changed();
    expect(pending.read()).toEqual(["a", "b"]);
    expect(pending.asked).toBe(2);
  });

  it("keeps answers of different questions apart, including undefined ones", () => {
    const memo = new ReadMemo();
    const next = question<number | undefined>(memo, "next", () => undefined, undefined);
    expect(next.read()).toBeUndefined();
    expect(next.read()).toBeUndefined();
    expect(next.asked).toBe(1);
    expect(memo.read("other", () => 7, 0)).toBe(7);
    expect(memo.read("other", () => 8, 0)).toBe(7);
  });

  it("hands every caller the same answer until the next write", () => {
    const memo = new ReadMemo();
    const first = memo.read("rows", () => [{ id: 1 }], []);
    expect(memo.read("rows", () => [{ id: 2 }], [])).toBe(first);
    memo.changed();
    expect(memo.read("rows", () => [{ id: 2 }], [])).toEqual([{ id: 2 }]);
  });

  it("answers empty without asking while the tables are known empty, until the first write", () => {
    const memo = new ReadMemo();
    memo.startEmpty();
    const rows = question(memo, "rows", () => ["a"], [] as string[]);
    expect(rows.read()).toEqual([]);
    expect(rows.read()).toEqual([]);
    expect(rows.asked).toBe(0);
    memo.changed(); // the store's first write (or a rollback)
    expect(rows.read()).toEqual(["a"]);
    expect(rows.asked).toBe(1);
  });

  it("keeps what a write says a read would answer, until the next write", () => {
    const memo = new ReadMemo();
    const row = question<{ state: string } | undefined>(
      memo,
      "get:r1",
      () => ({ state: "from sqlite" }),
      undefined,
    );
    memo.changed();
    memo.remember("get:r1", { state: "inserted" });
    expect(row.read()).toEqual({ state: "inserted" });
    expect(row.asked).toBe(0);
    memo.changed();
    expect(row.read()).toEqual({ state: "from sqlite" });
    expect(row.asked).toBe(1);
  });

  it("tells what it would answer without asking: the empty answer, a remembered one, or nothing", () => {
    const memo = new ReadMemo();
    memo.startEmpty();
    expect(memo.known("rows", [])).toEqual({ value: [] });
    memo.changed();
    expect(memo.known("rows", [])).toBeUndefined();
    memo.read("rows", () => ["a"], []);
    expect(memo.known("rows", [])).toEqual({ value: ["a"] });
  });
});
