import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signCallback } from "../../../src/providers/remote-protocol";
import { api, createSession, startOneShot } from "../../support/api";
import { allEvents, eventually, ofType, sleep, waitForEvents } from "../../support/logs";
import { dumpTables, tablesHash } from "../../support/objects";
import {
  installRemoteNet,
  type Recorded,
  registerRemote,
  remoteIdOf,
  type RemoteNet,
  secretOf,
} from "../../support/remote";
import { script } from "../../support/scripts";

/**
 * The callback route (`POST /v1/callbacks/:parentId/:runId`) refuses what it must and changes
 * nothing when it does: a bad or missing signature, another run's secret, a tampered body, a
 * timestamp outside the five-minute window (even correctly signed), a body naming another
 * session (401); an unknown run (404); a replay of a genuine callback (409 REPLAYED).
 */

let net: RemoteNet;
beforeAll(() => {
  net = installRemoteNet();
});
afterAll(() => net.restore());
afterEach(() => {
  net.dropCallbacks = false;
});

/** Every table of the session except the transport's own progress (polls may advance it). */
async function stateOf(id: string) {
  const { remote_runs: _transport, ...rest } = await dumpTables(id);
  return rest;
}

function postCallback(path: string, body: string, headers: Record<string, string> = {}) {
  return api("POST", path, {
    token: null,
    raw: body,
    headers: { "content-type": "application/json", ...headers },
  });
}

async function signed(secret: string, body: string, offsetSeconds = 0) {
  const timestamp = Math.floor(Date.now() / 1000) + offsetSeconds;
  return {
    "x-subagents-timestamp": String(timestamp),
    "x-subagents-signature": await signCallback(secret, timestamp, body),
  };
}

function resultBody(session: string, text = "forged", stopReason = "completed"): string {
  return JSON.stringify({ v: 1, session, result: { output: [{ type: "text", text }], stopReason } });
}

/** The remote session a run created, once the parent's transport row names it. */
function waitForRemoteId(parentId: string, runId: string): Promise<string> {
  return eventually(
    () => remoteIdOf(parentId, runId),
    (id) => id !== null,
    { intervalMs: 20, what: "the remote session to be created" },
  ) as Promise<string>;
}

describe("the callback route (semantics.md §12.3)", () => {
  it("refuses forged, stale, tampered and misdirected callbacks for a running run and changes nothing", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    const otherRun = (await startOneShot(parent.id, { provider, prompt: "other" })).runId;
    const otherSecret = await secretOf(parent.id, otherRun);
    await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 1);
    const runId = (
      await startOneShot(parent.id, { provider, prompt: script({ think: 3000 }, { say: "late" }) })
    ).runId;
    const remoteId = await waitForRemoteId(parent.id, runId);
    const secret = await secretOf(parent.id, runId);
    const path = `/v1/callbacks/${parent.id}/${runId}`;
    const before = await stateOf(parent.id);
    const body = resultBody(remoteId);

    const cases: [string, Promise<{ status: number; body: unknown }>, number, string][] = [
      ["no signature", postCallback(path, body), 401, "UNAUTHENTICATED"],
      [
        "a made-up signature",
        postCallback(path, body, {
          "x-subagents-timestamp": "1",
          "x-subagents-signature": `v1=${"a".repeat(64)}`,
        }),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "another run's secret",
        postCallback(path, body, await signed(otherSecret, body)),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "a body changed after signing",
        signed(secret, body).then((h) => postCallback(path, resultBody(remoteId, "changed"), h)),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "a correctly signed stale timestamp",
        postCallback(path, body, await signed(secret, body, -301)),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "a correctly signed future timestamp",
        // well past the window: the request is checked a moment after it is signed, and a second
        // that ticks over in between would bring a timestamp just past it back inside
        postCallback(path, body, await signed(secret, body, 360)),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "another session named in a signed body",
        signed(secret, resultBody(parent.id)).then((h) => postCallback(path, resultBody(parent.id), h)),
        401,
        "UNAUTHENTICATED",
      ],
      [
        "signed JSON that is not a result",
        signed(secret, '{"v":1}').then((h) => postCallback(path, '{"v":1}', h)),
        400,
        "INVALID_REQUEST",
      ],
      [
        "a signed body that is not JSON",
        signed(secret, "{").then((h) => postCallback(path, "{", h)),
        400,
        "MALFORMED_JSON",
      ],
      [
        "an unknown run",
        postCallback(`/v1/callbacks/${parent.id}/${crypto.randomUUID()}`, body, await signed(secret, body)),
        404,
        "NOT_FOUND",
      ],
      [
        "an unknown parent",
        postCallback(`/v1/callbacks/${crypto.randomUUID()}/${runId}`, body, await signed(secret, body)),
        404,
        "NOT_FOUND",
      ],
      [
        "a run id that is not a UUID",
        postCallback(`/v1/callbacks/${parent.id}/not-a-run`, body, await signed(secret, body)),
        404,
        "NOT_FOUND",
      ],
      [
        "a text body",
        postCallback(path, body, { ...(await signed(secret, body)), "content-type": "text/plain" }),
        400,
        "INVALID_REQUEST",
      ],
    ];
    for (const [name, answer, status, code] of cases) {
      const res = await answer;
      expect({ name, status: res.status, code: (res.body as any)?.error?.code }).toEqual({
        name,
        status,
        code,
      });
    }
    // the stale one says why (a correct signature alone is not enough)
    const stale = await postCallback(path, body, await signed(secret, body, -301));
    expect((stale.body as any).error.message).toMatch(/replay window/);

    // nothing changed: runs, log, de-duplication, outbox (the poll cursor may move meanwhile)
    expect(await stateOf(parent.id)).toEqual(before);
    const run = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}`);
    expect((run.body as any).state).toBe("running");
    // the genuine result still arrives, once
    const settled = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}?wait=10000`);
    expect((settled.body as any).result).toEqual({
      output: [{ type: "text", text: "late" }],
      stopReason: "completed",
    });
    const ends = ofType(await allEvents(parent.id), "subagent/end").filter(
      (e) => (e.data as any).runId === runId,
    );
    expect(ends).toHaveLength(1);
  });

  it("a replayed genuine callback is 409 REPLAYED and changes nothing; a forged one after settlement is 401", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    const runId = (await startOneShot(parent.id, { provider, prompt: "once" })).runId;
    const settled = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}?wait=10000`);
    expect((settled.body as any).state).toBe("settled");
    const genuine = net.calls.find(
      (c) => c.host === "parent.test" && c.path.endsWith(`/${runId}`),
    ) as Recorded;
    expect(genuine.status).toBe(200);
    await sleep(50);
    const before = await tablesHash(parent.id);
    const eventsBefore = await allEvents(parent.id);

    const replay = await postCallback(genuine.path, genuine.body, {
      "x-subagents-timestamp": genuine.headers["x-subagents-timestamp"]!,
      "x-subagents-signature": genuine.headers["x-subagents-signature"]!,
    });
    expect([replay.status, (replay.body as any).error.code]).toEqual([409, "REPLAYED"]);
    // re-signed with the right secret and a fresh timestamp: still the same result, still refused
    const secret = await secretOf(parent.id, runId);
    const resigned = await postCallback(genuine.path, genuine.body, await signed(secret, genuine.body, 5));
    expect([resigned.status, (resigned.body as any).error.code]).toEqual([409, "REPLAYED"]);
    const remoteId = await remoteIdOf(parent.id, runId);
    const otherResult = resultBody(remoteId!, "second answer");
    const second = await postCallback(genuine.path, otherResult, await signed(secret, otherResult));
    expect([second.status, (second.body as any).error.code]).toEqual([409, "REPLAYED"]);
    const forged = await postCallback(
      genuine.path,
      otherResult,
      await signed("not-the-secret-at-all", otherResult),
    );
    expect(forged.status).toBe(401);

    expect(await tablesHash(parent.id)).toBe(before);
    expect(await allEvents(parent.id)).toEqual(eventsBefore);
    const run = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}`);
    expect((run.body as any).result.output).toEqual([{ type: "text", text: "echo: once" }]);
  });

  it("a callback that lost to polling is refused as REPLAYED, which the remote counts as delivered", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.dropCallbacks = true; // the parent must learn the result by polling
    const runId = (await startOneShot(parent.id, { provider, prompt: "polled" })).runId;
    const settled = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}?wait=15000`);
    expect((settled.body as any).result).toEqual({
      output: [{ type: "text", text: "echo: polled" }],
      stopReason: "completed",
    });
    const remoteId = await remoteIdOf(parent.id, runId);
    const polls = net.calls.filter(
      (c) => c.method === "GET" && c.path.startsWith(`/v1/sessions/${remoteId}/events`),
    );
    expect(polls.length).toBeGreaterThan(0);
    net.dropCallbacks = false;
    // the remote's outbox retries its callback with backoff; the parent answers 409; delivered
    const entry = await eventually(
      async () => (await api("GET", `/v1/sessions/${remoteId}/outbox`)).body.entries[0],
      (e) => e.state === "delivered",
      { intervalMs: 100, what: "the remote's callback to be delivered" },
    );
    expect(entry).toMatchObject({ kind: "callback", state: "delivered" });
    expect(entry.attempts).toBeGreaterThan(0);
    const answers = net.calls
      .filter((c) => c.host === "parent.test" && c.path.endsWith(`/${runId}`))
      .map((c) => c.status);
    expect(answers.at(-1)).toBe(409);
    expect(answers.slice(0, -1).every((s) => s === 503)).toBe(true);
    expect(ofType(await allEvents(parent.id), "subagent/end")).toHaveLength(1);
  });
});
