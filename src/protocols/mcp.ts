/**
 * @module `subagents-edge/mcp`: MCP both ways, for `createSubagents({ protocols: [mcp] })` of
 * `subagents-edge/core`: a session's `mcpServers` (their tools offered to its model) and the
 * session's own MCP server face (`/v1/sessions/:id/mcp`). The official MCP SDKs load on first use.
 */
import type { McpProtocol } from "../platform/deployment";
import type { Protocol } from "./protocol";

const protocol: McpProtocol = {
  protocol: "mcp",
  client: () => import("@modelcontextprotocol/client"),
  server: () => import("@modelcontextprotocol/server"),
};

/** MCP both ways (a session's MCP servers, a session's MCP face). */
export const mcp: Protocol = protocol;
