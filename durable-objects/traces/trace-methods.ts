import { ok } from "../../src/contract/errors";
import type { TraceCursor, TreeSpanPage } from "../../src/contract/trace";
import { callerMethod, peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

const NO_SPANS = (): TreeSpanPage => ({ spans: [], bytes: 0 });

/** The trace of a session's tree (README "Traces"). */
export const traceMethods = {
  otlpTrace: callerMethod({
    need: "read",
    run: async (parts: Parts, _call, cursor?: TraceCursor) => ok(await parts.traces.otlpPage(cursor)),
  }),
  /** A page of the spans of this session's tree (its parent's `trace` asks). */
  traceSpanPage: peerMethod({
    absent: NO_SPANS,
    deleting: NO_SPANS,
    run: (parts: Parts, cursor: TraceCursor | undefined, budget: number, first: boolean) =>
      parts.traces.spanPage(cursor, budget, first),
  }),
};
