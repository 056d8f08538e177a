import { fail } from "../contract/errors";
import { isSessionId } from "../contract/ids";
import { SIGNATURE_HEADER, TIMESTAMP_HEADER } from "../providers/remote-protocol";
import { reply } from "./authed";
import { readText } from "./body";
import { failure } from "../contract/respond";
import { sessionStub } from "../platform/stubs";
import type { Route } from "./route";

/**
 * `POST /v1/callbacks/:parentId/:runId`: another deployment posts the result of a run this
 * deployment handed it (remote delegation). No bearer token: the HMAC signature under the run's
 * own secret is the authentication, checked by the parent session's object, which alone holds
 * the secret. 200 when applied; 401 for a bad signature or a stale timestamp; 409 `REPLAYED`
 * when the run's result was already applied; 404 for an unknown session or run.
 */
export function callbackRoutes(): Route[] {
  return [
    {
      method: "post",
      path: "/v1/callbacks/{parentId}/{runId}",
      summary: "A remote deployment posts a run's signed result",
      auth: "signed",
      ok: [200, "applied"],
      handle: async (request, env: Env) => {
        const parentId = request.params.parentId ?? "";
        const runId = request.params.runId ?? "";
        if (!isSessionId(parentId) || !isSessionId(runId)) return failure(fail("NOT_FOUND", "no such run"));
        const body = await readText(request);
        if (!body.ok) return failure(body);
        const outcome = await sessionStub(env, parentId).remoteCallback(runId, {
          timestamp: request.headers.get(TIMESTAMP_HEADER),
          signature: request.headers.get(SIGNATURE_HEADER),
          body: body.value,
        });
        return reply(outcome);
      },
    },
  ];
}
