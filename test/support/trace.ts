import { expect } from "vitest";

/** The trace context a tool call hands on (a message's `source.trace`): some trace, some span of it. */
export function aCallSpan(): unknown {
  return {
    traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
    parentSpanId: expect.stringMatching(/^[0-9a-f]{16}$/),
  };
}
