/**
 * Tool names the runtime itself offers, per session: one `subagent` tool per provider, the
 * control tools and the answering tools (delegation), `echo` and `schedule_message`. A tool filter may name them;
 * an embedding Worker's tool may not take one.
 */
export const DELEGATION_TOOL_NAMES =
  /^(subagent(_[a-z0-9_-]+)?|task_output|task_kill|structured_output|send_message|interrupt_agent|list_agents|report)$/;

export const builtinToolNames: { test(name: string): boolean } = {
  test: (name) => name === "echo" || name === "schedule_message" || DELEGATION_TOOL_NAMES.test(name),
};
