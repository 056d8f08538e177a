import { A2A_ENDPOINT_PATH } from "../a2a/endpoint";
import { fail } from "../contract/errors";
import { failure } from "../contract/respond";
import type { Deployment } from "../platform/deployment";
import { protocolMissing } from "../protocols/protocol";
import { authenticate, isFailure, type TokenSettings } from "./auth";
import type { Route } from "./route";

/**
 * The A2A face's routes (docs/semantics.md §16): the agent card at `/.well-known/agent-card.json`
 * and its JSON-RPC endpoint at `/v1/a2a` (both under the base path). Only the deployment's admin
 * and tenant tokens are accepted, refused with HTTP 401/403 before any JSON-RPC is read. The
 * protocol layer (a2a-face.ts, the official SDK) is the deployment's `a2a` protocol, loaded by
 * the first request that needs it: a Worker that is never asked over A2A never builds it, and one
 * made without the protocol never bundles it (README "Protocols and bundle size").
 */
export function a2aRoutes(deployment: Deployment, base: string, version: string): Route[] {
  // a deployment without the a2a protocol has no A2A face: both routes answer 404 saying so
  const face = deployment.protocols.a2a?.face;
  const absent = () => failure(fail("NOT_FOUND", protocolMissing("a2a")));
  return [
    {
      method: "get",
      path: "/.well-known/agent-card.json",
      summary: "The A2A agent card: this deployment as an A2A agent (its JSON-RPC endpoint, skills, auth)",
      auth: "none",
      ok: [200, "an A2A 1.0 agent card"],
      handle: async (request, env) => {
        if (!face) return absent();
        const { agentCardResponse } = await face();
        return agentCardResponse(request, env, base, version);
      },
    },
    {
      method: "post",
      path: A2A_ENDPOINT_PATH,
      summary:
        "A2A JSON-RPC (1.0 methods with A2A-Version: 1.0, else the 0.3 names): tasks are top-level sessions",
      auth: "admin",
      ok: [200, "a JSON-RPC answer (JSON, or SSE for streaming methods)"],
      raw: ["application/json", "text/event-stream"],
      handle: async (request, env) => {
        if (!face) return absent();
        const caller = await authenticate(request, env as Env & TokenSettings);
        if (isFailure(caller)) return failure(caller);
        if (caller.kind !== "admin")
          return failure(
            fail("UNAUTHORIZED", "the A2A endpoint takes the deployment's admin or tenant tokens"),
          );
        const { a2aRpc } = await face();
        return a2aRpc(request, env, deployment, caller, base, version);
      },
    },
  ];
}
