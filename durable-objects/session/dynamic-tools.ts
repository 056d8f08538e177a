/**
 * Tool names that exist per session (one `subagent` tool per provider, the control tools) and so
 * are not in the static registry; a tool filter may still name them.
 */
export const DYNAMIC_TOOLS =
  /^(subagent(_[a-z0-9_-]+)?|task_output|task_kill|structured_output|send_message|interrupt_agent|list_agents|report)$/;
