/**
 * A model tool call's key, `<turn>:<toolCallId>`: stable across re-runs of the call, so a start,
 * a follow-up or a run it began is found again (semantics.md §10.3). Calls of other callers (an
 * MCP client's, `mcp:<id>`) have keys of another shape.
 */
export function callKey(turn: number, toolCallId: string): string {
  return `${turn}:${toolCallId}`;
}

/** The turn and call of a model tool call's key; undefined for a key of another caller. */
export function turnCallOf(key: string): { turn: number; toolCallId: string } | undefined {
  const match = /^(\d+):(.+)$/.exec(key);
  return match ? { turn: Number(match[1]), toolCallId: match[2]! } : undefined;
}
