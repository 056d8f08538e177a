import { describe, expect, it } from "vitest";
import { type ApiResult, api, createSession, TENANT_ADMIN } from "../../support/api";

/**
 * Failed authentications count against the session the token names (or, for a token naming no
 * session, the token's hash), never the client's address: past the limit (the SESSION_RATE_LIMIT
 * binding's 600 a minute) they answer 429 RATE_LIMITED with Retry-After. Issue 23 saw them never
 * limited: a guesser varying the secret was never refused. A correct token is never refused for
 * someone else's failures (no one can lock a session's owner or an admin out).
 */

const LIMIT = 600;
const junk = () => crypto.randomUUID().replaceAll("-", "").repeat(2);

/**
 * Sends `attempt(i)` until it is refused with 429 (at most `LIMIT + 50` times); the limiter counts
 * in fixed one-minute windows, so a burst that crosses a window's end is measured again, from the
 * start of a window.
 */
async function burst(attempt: (i: number) => Promise<ApiResult>) {
  const once = async () => {
    const window = Math.floor(Date.now() / 60_000);
    let refused: ApiResult | undefined;
    const statuses = new Set<number>();
    let failed = 0;
    for (let i = 0; i < LIMIT + 50 && !refused; i++) {
      const res = await attempt(i);
      if (res.status === 429) refused = res;
      else {
        failed++;
        statuses.add(res.status);
      }
    }
    return {
      refused,
      failed,
      statuses: [...statuses],
      oneWindow: Math.floor(Date.now() / 60_000) === window,
    };
  };
  const first = await once();
  if (first.oneWindow) return first;
  // the burst crossed a window's end: the new window already counts its tail, so measure again
  // from the start of the next one (a slow, loaded machine)
  await new Promise((resolve) => setTimeout(resolve, 60_000 - (Date.now() % 60_000) + 100));
  return once();
}

function expectLimited(result: Awaited<ReturnType<typeof burst>>): void {
  expect({ failed: result.failed, statuses: result.statuses }).toEqual({ failed: LIMIT, statuses: [401] });
  expect(result.refused?.body.error.code).toBe("RATE_LIMITED");
  expect(result.refused?.headers.get("retry-after")).toBe("60");
}

describe("failed authentications are rate-limited (README, Security and limits: semantics.md §8)", () => {
  it("refuses a guesser varying the secret of an existing session with 429 past the limit; the owner's token still works", async () => {
    const target = await createSession();
    const result = await burst(() =>
      api("GET", `/v1/sessions/${target.id}`, { token: `${target.id}.${junk()}` }),
    );
    expectLimited(result);
    // the next guess on any route is refused too, and nothing was stored by any of them
    const send = await api("POST", `/v1/sessions/${target.id}/messages`, {
      token: `${target.id}.${junk()}`,
      body: { content: "x" },
    });
    expect(send.status).toBe(429);
    expect((await api("GET", `/v1/sessions/${target.id}/events`)).body.events).toEqual([]);
    expect((await api("GET", `/v1/sessions/${target.id}`, { token: target.token })).status).toBe(200);
  }, 240_000);

  it("limits guesses at a session that does not exist exactly as at one that does", async () => {
    const missing = crypto.randomUUID();
    expectLimited(
      await burst(() => api("GET", `/v1/sessions/${missing}`, { token: `${missing}.${junk()}` })),
    );
  }, 240_000);

  it("limits one wrong admin-like token repeated; the admin and tenant tokens are exempt because they are correct", async () => {
    const guess = `guess-${crypto.randomUUID()}`;
    expectLimited(await burst(() => api("POST", "/v1/sessions", { token: guess, body: {} })));
    expect((await api("POST", "/v1/sessions", { body: {} })).status).toBe(201);
    expect((await api("POST", "/v1/sessions", { token: TENANT_ADMIN, body: {} })).status).toBe(201);
  }, 240_000);
});
