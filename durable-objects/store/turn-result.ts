import type { SubagentResult } from "../../src/contract/run";
import { oneShotResult } from "../../src/core/run-result";
import { sumUsage } from "../../src/core/usage";
import type { EventLog } from "./event-log";

/**
 * The result of the turn whose events start at `fromSeq`, read from the log: its assistant
 * messages, how it ended, and, when an output schema was requested, the last successful
 * `structured_output` capture (semantics.md §5.6). The rules are `oneShotResult`'s.
 */
export function turnResult(log: EventLog, fromSeq: number, schemaRequested: boolean): SubagentResult {
  const turnEnd = log.last("turn/end", fromSeq)?.data;
  const captured = schemaRequested
    ? log
        .ofTypes(["tool/result"], fromSeq)
        .filter((e) => e.data.name === "structured_output" && !e.data.isError)
        .map((e) => e.data.structured)
        .filter((value) => value !== undefined)
        .pop()
    : undefined;
  const assistant = log.ofTypes(["assistant/message"], fromSeq);
  const usage = sumUsage(assistant.map((e) => e.data.usage));
  return oneShotResult({
    assistant: assistant.map((e) => e.data.content),
    ...(usage ? { usage } : {}),
    ...(turnEnd === undefined
      ? {}
      : {
          turnEnd:
            turnEnd.error === undefined
              ? { reason: turnEnd.reason }
              : { reason: turnEnd.reason, error: turnEnd.error },
        }),
    schemaRequested,
    ...(captured === undefined ? {} : { capture: { value: captured } }),
  });
}
