import { describe, expect, it } from "vitest";
import {
  type ApiResult,
  api,
  createSession,
  openStream,
  readResult,
  startOneShot,
  waitForRun,
} from "../../support/api";

/**
 * The existence oracle of issue 23: `<id>.<junk>` answered 401 for an existing session and 404 for
 * a missing one, so anyone could learn which session ids exist. An invalid token now reads the
 * same whatever the session it names or the session it asks about; a valid token asking about a
 * session it may not see still learns nothing (404, as for a session that does not exist).
 */

const junk = () => `${crypto.randomUUID().replaceAll("-", "")}${crypto.randomUUID().replaceAll("-", "")}`;
const missingId = () => crypto.randomUUID();

/** Every session route a session token may call, as a request for `target` with `token`. */
function routes(target: string, token: string): [string, () => Promise<ApiResult>][] {
  return [
    ["describe", () => api("GET", `/v1/sessions/${target}`, { token })],
    ["send", () => api("POST", `/v1/sessions/${target}/messages`, { token, body: { content: "hi" } })],
    ["events", () => api("GET", `/v1/sessions/${target}/events`, { token })],
    ["interrupt", () => api("POST", `/v1/sessions/${target}/interrupt`, { token })],
    ["compact", () => api("POST", `/v1/sessions/${target}/compact`, { token })],
    ["children", () => api("GET", `/v1/sessions/${target}/children`, { token })],
    ["descendants", () => api("GET", `/v1/sessions/${target}/descendants`, { token })],
    ["outbox", () => api("GET", `/v1/sessions/${target}/outbox`, { token })],
    ["run", () => api("GET", `/v1/sessions/${target}/runs/${crypto.randomUUID()}`, { token })],
    [
      "start",
      () =>
        api("POST", `/v1/sessions/${target}/subagents`, {
          token,
          body: { provider: "spawn", mode: "one-shot", prompt: "hi" },
        }),
    ],
    ["stream", async () => readResult(await openStream(target, { token }))],
  ];
}

describe("an invalid token is 401 whether or not the session it names exists (README, Security and limits)", () => {
  it("answers <existing id>.<junk> and <missing id>.<junk> with the same 401 on every session route", async () => {
    const existing = await createSession();
    const missing = missingId();
    for (const [[name, onExisting], [, onMissing]] of zip(
      routes(existing.id, `${existing.id}.${junk()}`),
      routes(missing, `${missing}.${junk()}`),
    )) {
      const [a, b] = [await onExisting(), await onMissing()];
      expect({ name, status: a.status, body: a.body }).toEqual({
        name,
        status: 401,
        body: { error: { code: "UNAUTHENTICATED", message: "the token is not valid" } },
      });
      expect({ name, status: b.status, body: b.body }).toEqual({ name, status: a.status, body: a.body });
      expect(b.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("answers an invalid token asking about another session with the same 401, whether that session exists or not", async () => {
    const named = await createSession();
    const other = await createSession();
    const invalid = `${named.id}.${junk()}`;
    const aboutOther = await api("GET", `/v1/sessions/${other.id}`, { token: invalid });
    const aboutMissing = await api("GET", `/v1/sessions/${missingId()}`, { token: invalid });
    const ofMissing = await api("GET", `/v1/sessions/${other.id}`, { token: `${missingId()}.${junk()}` });
    for (const res of [aboutOther, aboutMissing, ofMissing]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(aboutOther.body);
    }
  });

  it("does not tell an invalid ancestor token which descendants exist", async () => {
    const parent = await createSession();
    const { runId, id: child } = await startOneShot(parent.id, { prompt: "hi" });
    await waitForRun(parent.id, runId);
    const invalid = `${parent.id}.${junk()}`;
    const real = await api("GET", `/v1/sessions/${child}`, { token: invalid });
    const made_up = await api("GET", `/v1/sessions/${missingId()}`, { token: invalid });
    expect([real.status, made_up.status]).toEqual([401, 401]);
    expect(made_up.body).toEqual(real.body);
    // the valid token still reads its descendant
    expect((await api("GET", `/v1/sessions/${child}`, { token: parent.token })).status).toBe(200);
  });

  it("keeps 404 for a valid token asking about a session it may not see, existing or not", async () => {
    const mine = await createSession();
    const other = await createSession();
    const aboutOther = await api("GET", `/v1/sessions/${other.id}`, { token: mine.token });
    const aboutMissing = await api("GET", `/v1/sessions/${missingId()}`, { token: mine.token });
    expect([aboutOther.status, aboutMissing.status]).toEqual([404, 404]);
    expect(aboutMissing.body).toEqual(aboutOther.body);
    // and a route that answers 404 for its own reasons keeps it for the session's own valid token
    const noRun = await api("GET", `/v1/sessions/${mine.id}/runs/${crypto.randomUUID()}`, {
      token: mine.token,
    });
    expect(noRun.status).toBe(404);
  });
});

function zip<A, B>(as: A[], bs: B[]): [A, B][] {
  return as.map((a, i) => [a, bs[i]!]);
}
