import { describe, expect, it } from "vitest";
import { ReadMemo } from "../../../durable-objects/store/read-memo";

/** The stores' read memo: an answer is reused until the store's next write. */
describe("a store's read memo", () => {
  it("answers from memory until the next write, then asks again", () => {
    const memo = new ReadMemo();
    let queries = 0;
    let rows = ["a"];
    const read = () =>
      memo.read("pending", () => {
        queries++;
        return [...rows];
      }, []);
    expect(read()).toEqual(["a"]);
    expect(read()).toEqual(["a"]);
    expect(queries).toBe(1);
    rows = ["a", "b"];
    memo.changed();
    expect(read()).toEqual(["a", "b"]);
    expect(queries).toBe(2);
  });

  it("keeps answers of different questions apart, including undefined ones", () => {
    const memo = new ReadMemo();
    let asked = 0;
    const next = () =>
      memo.read(
        "next",
        (): number | undefined => {
          asked++;
          return undefined;
        },
        undefined,
      );
    expect(next()).toBeUndefined();
    expect(next()).toBeUndefined();
    expect(asked).toBe(1);
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
    let asked = 0;
    const rows = () =>
      memo.read(
        "rows",
        () => {
          asked++;
          return ["a"];
        },
        [] as string[],
      );
    expect(rows()).toEqual([]);
    expect(rows()).toEqual([]);
    expect(asked).toBe(0);
    memo.changed(); // the store's first write (or a rollback)
    expect(rows()).toEqual(["a"]);
    expect(asked).toBe(1);
  });

  it("keeps what a write says a read would answer, until the next write", () => {
    const memo = new ReadMemo();
    let asked = 0;
    const row = () =>
      memo.read(
        "get:r1",
        () => {
          asked++;
          return { state: "from sqlite" };
        },
        undefined,
      );
    memo.changed();
    memo.remember("get:r1", { state: "inserted" });
    expect(row()).toEqual({ state: "inserted" });
    expect(asked).toBe(0);
    memo.changed();
    expect(row()).toEqual({ state: "from sqlite" });
    expect(asked).toBe(1);
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
