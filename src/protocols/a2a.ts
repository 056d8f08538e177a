/**
 * @module `subagents-edge/a2a`: A2A both ways, for `createSubagents({ protocols: [a2a] })` of
 * `subagents-edge/core`: the deployment as an A2A agent (its agent card and JSON-RPC endpoint)
 * and `a2a` providers (runs handed to any A2A agent). The official A2A SDK loads on first use.
 */
import type { A2aProtocol } from "../platform/deployment";
import type { Protocol } from "./protocol";

const protocol: A2aProtocol = {
  protocol: "a2a",
  face: () => import("../http/a2a-face"),
  client: () => import("../providers/a2a-client"),
};

/** A2A both ways (the deployment's A2A face, `a2a` providers). */
export const a2a: Protocol = protocol;
