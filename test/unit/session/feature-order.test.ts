import { describe, expect, it } from "vitest";
import { inOrder } from "../../../durable-objects/kernel/in-order";
import { DRIVE_ORDER, STOP_ORDER, TURN_END_ORDER } from "../../../durable-objects/session/feature-order";

/**
 * The order between a session's features is behaviour: a deletion's erasure must end a pass
 * before anything else runs, a cut-short drain must go before any model step, the outbox drains
 * after the step that filled it, a turn's end must deny its approvals before its callback reads
 * the turn, and a deleted session's turn must end before its outbox is withdrawn. These lists change only on purpose.
 */
describe("the declared order of a session's features", () => {
  it("runs the drive loop's hooks in this order", () => {
    expect(DRIVE_ORDER).toEqual([
      "deletion",
      "retention",
      "continuable child",
      "approvals",
      "schedules",
      "turn deadline",
      "turn driver",
      "delivery",
      "one-shot runs",
      "local transport",
      "continuable children",
      "one-shot child",
      "remote transport",
      "ACP transport",
      "a2a transport",
      "callback sender",
      "child watch",
      "trace export",
    ]);
  });

  it("runs the turn-end hooks in this order", () => {
    expect(TURN_END_ORDER).toEqual(["one-shot runs", "one-shot child", "approvals", "callback sender"]);
  });

  it("stops a deleted session's parts in this order", () => {
    expect(STOP_ORDER).toEqual(["conversation", "schedules", "one-shot runs", "delivery"]);
  });

  it("puts parts in the declared order, and refuses a part with no place in it or a name no part carries", () => {
    const part = (name: string) => ({ name });
    expect(inOrder([part("c"), part("a"), part("b")], ["a", "b", "c"]).map((p) => p.name)).toEqual([
      "a",
      "b",
      "c",
    ]);
    expect(() => inOrder([part("a"), part("x")], ["a"])).toThrow("no place in the declared order for x");
    expect(() => inOrder([part("a")], ["a", "b"])).toThrow(
      "the declared order names b, which no part carries",
    );
    expect(() => inOrder([part("a"), part("a")], ["a"])).toThrow("two parts carry the same name");
  });
});
