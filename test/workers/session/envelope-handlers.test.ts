import { describe, expect, it } from "vitest";
import type { SessionPart } from "../../../durable-objects/kernel/part";
import { SessionSignals } from "../../../durable-objects/kernel/signals";
import type { Envelope } from "../../../src/contract/envelope";

const report: Envelope = {
  v: 1,
  id: "r1",
  from: "child",
  to: "parent",
  kind: "report",
  messageId: "m1",
  text: "half way",
  delivery: "next-step",
};

describe("the session's signals", () => {
  it("dispatch each kind to the one part that registered it", () => {
    const seen: string[] = [];
    const parts: SessionPart[] = [
      {
        name: "a",
        envelopes: {
          report: (e) => {
            seen.push(`a:${e.kind}:${e.text}`);
            return false;
          },
        },
      },
      {
        name: "b",
        envelopes: {
          settled: () => {
            seen.push("b");
            return true;
          },
        },
      },
    ];
    const signals = new SessionSignals();
    for (const part of parts) signals.add(part);
    signals.requireHandlers(["report", "settled"]);
    expect(signals.apply(report, undefined)).toBe(false);
    expect(seen).toEqual(["a:report:half way"]);
    expect(() => signals.apply({ ...report, kind: "cancel-run", runId: "x" } as Envelope, undefined)).toThrow(
      /no part handles envelope kind cancel-run/,
    );
  });

  it("refuse a kind registered twice and a deliverable kind nobody handles", () => {
    const a: SessionPart = { name: "a", envelopes: { report: () => false } };
    const b: SessionPart = { name: "b", envelopes: { report: () => false } };
    const signals = new SessionSignals();
    signals.add(a);
    expect(() => signals.add(b)).toThrow(/handled by both a and b/);
    expect(() => signals.requireHandlers(["report", "settled"])).toThrow(
      /no part handles envelope kind settled/,
    );
  });
});
