import { describe, expect, it } from "vitest";
import { parseTraceparent, traceparentOf } from "../../../src/trace/traceparent";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("traceparent (W3C Trace Context)", () => {
  it("reads the trace and the caller's span, and writes them back in the same form", () => {
    const context = parseTraceparent(`00-${TRACE}-${SPAN}-01`);
    expect(context).toEqual({ traceId: TRACE, parentSpanId: SPAN });
    expect(traceparentOf(context!)).toBe(`00-${TRACE}-${SPAN}-01`);
    // a later version may add fields after the four it shares with version 00
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-00-extra`)).toEqual({ traceId: TRACE, parentSpanId: SPAN });
  });

  it("ignores what the spec calls invalid (the work then starts a trace of its own)", () => {
    for (const bad of [
      undefined,
      null,
      "",
      `ff-${TRACE}-${SPAN}-01`,
      `00-${"0".repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${"0".repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${TRACE.slice(1)}-${SPAN}-01`,
      "not a traceparent",
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
  });

  it("a context without a span of its own has no traceparent to send", () => {
    expect(traceparentOf({ traceId: TRACE })).toBeUndefined();
  });
});
