/**
 * @module `subagents-edge/acp`: the Agent Client Protocol, for `createSubagents({ protocols:
 * [acp] })` of `subagents-edge/core`: `acp` providers (runs handed to an ACP agent over a
 * WebSocket). The official ACP SDK loads on a session's first ACP run.
 */
import type { AcpProtocol } from "../platform/deployment";
import type { Protocol } from "./protocol";

const protocol: AcpProtocol = {
  protocol: "acp",
  sdk: () => import("@agentclientprotocol/sdk"),
};

/** ACP `acp` providers. */
export const acp: Protocol = protocol;
