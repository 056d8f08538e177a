import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";

describe("per-token rate limiting (semantics.md §8)", () => {
  it("answers 429 RATE_LIMITED past the per-minute budget of a session token, storing nothing, and never limits the admin", async () => {
    // The limiter counts in fixed one-minute windows: a burst that crosses a window's end (a slow
    // machine) gets a fresh budget mid-way, so such a burst is measured again, in one window.
    const burst = async () => {
      const session = await createSession();
      const window = Math.floor(Date.now() / 60_000);
      let refused: { status: number; headers: Headers; body: any } | undefined;
      let allowed = 0;
      for (let i = 0; i < 1300 && !refused; i++) {
        const res = await api("GET", `/v1/sessions/${session.id}`, { token: session.token });
        if (res.status === 429) refused = res;
        else allowed++;
      }
      return { session, refused, allowed, oneWindow: Math.floor(Date.now() / 60_000) === window };
    };
    let measured = await burst();
    if (!measured.oneWindow) measured = await burst();
    const { session, refused, allowed } = measured;
    expect(allowed).toBe(600);
    expect(refused?.body.error.code).toBe("RATE_LIMITED");
    // a 429 always says when to come back: the limit's window is a minute
    expect(refused?.headers.get("retry-after")).toBe("60");
    const before = await api("GET", `/v1/sessions/${session.id}/events`);
    const send = await api("POST", `/v1/sessions/${session.id}/messages`, {
      token: session.token,
      body: { content: "x" },
    });
    expect(send.status).toBe(429);
    const after = await api("GET", `/v1/sessions/${session.id}/events`);
    expect(after.body.events).toEqual(before.body.events);
    const admin = await api("POST", `/v1/sessions/${session.id}/messages`, {
      body: { content: "admin still works" },
    });
    expect(admin.status).toBe(202);
    const other = await createSession();
    expect((await api("GET", `/v1/sessions/${other.id}`, { token: other.token })).status).toBe(200);
  });
});
