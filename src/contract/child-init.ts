import type { Descriptor } from "./descriptor";
import type { ContentBlock } from "./content";
import type { SessionEvent } from "./events";
import type { Jurisdiction, LocationHint } from "./placement";
import type { AgentOptions } from "./session";
import type { TraceContext } from "./trace";

/**
 * What a provider sends a new child's object (`init`). Idempotent by (child id, parent, run id):
 * a retry gets the same child; another parent is refused.
 */
export interface ChildInit {
  v: 1;
  id: string;
  parentSession: string;
  runId: string;
  provider: string;
  lineage: string[];
  tenant?: string;
  tokenHash: string | null;
  delegationDepth: number;
  mode: "one-shot";
  label?: string;
  descriptor: Descriptor;
  options: AgentOptions;
  prompt: ContentBlock[];
  /** The span that started it (its parent's tool call, a caller's `traceparent`): its first turn's trace. */
  trace?: TraceContext;
  /** Fork: the parent's view as of its last turn end (child-spec.ts `forkSeed`). */
  seed?: Pick<SessionEvent, "type" | "at" | "data">[];
  outputSchema?: Record<string, unknown>;
  /** Placement of the child (its jurisdiction is the parent's, if the parent has one). */
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
  /** Started by a call made through a session's MCP face, or below one (SessionHeader `belowMcpFace`). */
  belowMcpFace?: true;
}
