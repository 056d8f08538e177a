import { describe, expect, it } from "vitest";
import { ReadMemo } from "../../../durable-objects/store/read-memo";

/** The stores' read memo: an answer is reused until the store's next write, and never shared mutable. */
describe("a store's read memo", () => {
  it("answers from memory until the next write, then asks again", () => {
    const memo = new ReadMemo();
    let queries = 0;
    let rows = ["a"];
    const read = () =>
      memo.read("pending", () => {
        queries++;
        return [...rows];
      });
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
      memo.read("next", () => {
        asked++;
        return undefined;
      });
    expect(next()).toBeUndefined();
    expect(next()).toBeUndefined();
    expect(asked).toBe(1);
    expect(memo.read("other", () => 7)).toBe(7);
    expect(memo.read("other", () => 8)).toBe(7);
  });

  it("freezes an answer, so a caller cannot change what the next one reads", () => {
    const memo = new ReadMemo();
    const answer = memo.read("rows", () => [{ id: 1 }]);
    expect(() => (answer as { id: number }[]).push({ id: 2 })).toThrow(TypeError);
    expect(memo.read("rows", () => [])).toEqual([{ id: 1 }]);
  });
});
