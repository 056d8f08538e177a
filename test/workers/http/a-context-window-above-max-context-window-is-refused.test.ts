import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  rpc,
  rpcFailure,
  startContinuable,
  startRun,
} from "../../support/api";

/**
 * `contextWindow` is bounded by the deployment's MAX_CONTEXT_WINDOW (1,000,000 tokens in
 * wrangler.toml): a window far past any model's would never compact and would send the whole log
 * on every step. Wherever a window is accepted (a create over HTTP and RPC, one-shot and continuable
 * starts) one above the limit is `400 INVALID_REQUEST` naming the field and the limit, and nothing
 * is created; the limit itself is accepted.
 */
const REFUSED =
  /^contextWindow: 100000000 is above this deployment's limit of 1000000 tokens \(MAX_CONTEXT_WINDOW\)$/;

describe("a contextWindow above MAX_CONTEXT_WINDOW", () => {
  it("is refused on a create, over HTTP and RPC, and no session is made", async () => {
    const key = `window-${crypto.randomUUID()}`;
    expectError(
      await api("POST", "/v1/sessions", { body: { contextWindow: 100_000_000, idempotencyKey: key } }),
      400,
      "INVALID_REQUEST",
      REFUSED,
    );
    expect(
      await rpcFailure(() => rpc.createSession({ contextWindow: 100_000_000, idempotencyKey: key })),
    ).toMatch(
      /^INVALID_REQUEST: contextWindow: 100000000 is above this deployment's limit of 1000000 tokens/,
    );
    // nothing was made under the key: the same create at the limit is a first create (201 and a token)
    const atLimit = await api("POST", "/v1/sessions", {
      body: { contextWindow: 1_000_000, idempotencyKey: key },
    });
    expect({ status: atLimit.status, token: typeof atLimit.body.token }).toEqual({
      status: 201,
      token: "string",
    });
  });

  it("is refused on one-shot and continuable starts, and no child is made", async () => {
    const parent = await createSession();
    expectError(
      await startRun(parent.id, { prompt: "hi", contextWindow: 100_000_000 }),
      400,
      "INVALID_REQUEST",
      REFUSED,
    );
    expectError(
      await startContinuable(parent.id, { prompt: "hi", contextWindow: 100_000_000 }),
      400,
      "INVALID_REQUEST",
      REFUSED,
    );
    expect((await api("GET", `/v1/sessions/${parent.id}/children`)).body.entries).toEqual([]);
    expect((await startRun(parent.id, { prompt: "hi", contextWindow: 1_000_000 })).status).toBe(201);
  });
});
