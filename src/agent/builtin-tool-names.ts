/**
 * Tool names the runtime itself offers, per session: one `subagent` tool per provider, the
 * control tools and the answering tools (delegation), `echo` and `schedule_message`. A tool filter may name them;
 * an embedding Worker's tool may not take one.
 */
export const DELEGATION_TOOL_NAMES =
  /^(subagent(_[a-z0-9_-]+)?|task_output|task_kill|structured_output|send_message|interrupt_agent|list_agents|report)$/;

/**
 * The tools a session's MCP face offers its client beside the session's own (session/mcp-face.ts):
 * no model sees them, and a tool filter may name them (they obey it like every tool).
 */
export const MCP_FACE_TOOL_NAMES: ReadonlySet<string> = new Set(["pending_approvals", "decide_approval"]);

export const builtinToolNames: { test(name: string): boolean } = {
  test: (name) =>
    name === "echo" ||
    name === "schedule_message" ||
    DELEGATION_TOOL_NAMES.test(name) ||
    MCP_FACE_TOOL_NAMES.has(name),
};
