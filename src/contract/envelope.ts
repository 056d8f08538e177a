import type { SubagentResult } from "./run";

/**
 * Messages between session objects, written to the sender's outbox in the same transaction as
 * the event that caused them and delivered with retries. `id` is the idempotency key (the
 * receiver applies each once); `v` lets the previous and the current code read each other.
 */
export type Envelope = RunResultEnvelope | CancelRunEnvelope;

interface EnvelopeBase {
  v: 1;
  id: string;
  from: string;
  to: string;
}

/** Child -> parent: the one result of a one-shot run. */
export interface RunResultEnvelope extends EnvelopeBase {
  kind: "run-result";
  runId: string;
  result: SubagentResult;
}

/** Parent -> child: cancel a one-shot run (dispose). */
export interface CancelRunEnvelope extends EnvelopeBase {
  kind: "cancel-run";
  runId: string;
}

export const ENVELOPE_VERSIONS: readonly number[] = [1];
