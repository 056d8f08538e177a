import type { IRequest, RouterType } from "itty-router";
import { A2A_ENDPOINT_PATH } from "../a2a/endpoint";
import { fail } from "../contract/errors";
import { failure } from "../contract/respond";
import type { Deployment } from "../platform/deployment";
import { protocolMissing } from "../protocols/protocol";
import { authenticate, isFailure, type TokenSettings } from "./auth";

/**
 * The A2A face's routes (docs/semantics.md §16): the agent card at `/.well-known/agent-card.json`
 * and its JSON-RPC endpoint at `/v1/a2a` (both under the base path). Only the deployment's admin
 * and tenant tokens are accepted, refused with HTTP 401/403 before any JSON-RPC is read. The
 * protocol layer (a2a-face.ts, the official SDK) is the deployment's `a2a` protocol, loaded by
 * the first request that needs it: a Worker that is never asked over A2A never builds it, and one
 * made without the protocol never bundles it (README "Protocols and bundle size").
 */
export function addA2aRoutes(
  router: RouterType<IRequest, [Env, ExecutionContext]>,
  deployment: Deployment,
  base: string,
  version: string,
) {
  // a deployment without the a2a protocol has no A2A face: both routes answer 404 saying so
  const face = deployment.protocols.a2a?.face;
  const absent = () => failure(fail("NOT_FOUND", protocolMissing("a2a")));
  router.get("/.well-known/agent-card.json", async (request, env) => {
    if (!face) return absent();
    const { agentCardResponse } = await face();
    return agentCardResponse(request, env, base, version);
  });

  router.post(A2A_ENDPOINT_PATH, async (request, env) => {
    if (!face) return absent();
    const caller = await authenticate(request, env as Env & TokenSettings);
    if (isFailure(caller)) return failure(caller);
    if (caller.kind !== "admin")
      return failure(fail("UNAUTHORIZED", "the A2A endpoint takes the deployment's admin or tenant tokens"));
    const { a2aRpc } = await face();
    return a2aRpc(request, env, deployment, caller, base, version);
  });
}
