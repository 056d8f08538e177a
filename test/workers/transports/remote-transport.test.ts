import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN, api, createSession, runOf, startOneShot, waitForRun } from "../../support/api";
import { allEvents, eventually, ofType, sleep } from "../../support/logs";
import { sqlRows, stub } from "../../support/objects";
import {
  installRemoteNet,
  registerRemote,
  remoteIdOf,
  type RemoteNet,
  transportOf,
} from "../../support/remote";
import { script } from "../../support/scripts";

/**
 * The parent's transport state machine (create -> prompt -> await -> done, interrupt after a
 * cancellation): retries with backoff through an unreachable remote, idempotent retries when an
 * answer is lost, polling when no callback comes, the deadline for a remote that vanishes, an
 * immediate `error` for a refusal, `aborted` plus a remote interrupt for a cancellation, and
 * survival of an eviction mid-run.
 */

let net: RemoteNet;
beforeAll(() => {
  net = installRemoteNet();
});
afterAll(() => net.restore());
afterEach(() => {
  net.remoteDown = false;
  net.dropCallbacks = false;
  net.loseAnswer = null;
  vi.useRealTimers();
});

describe("the remote transport (semantics.md §12.2, §10.6)", () => {
  it("retries an unreachable remote with backoff and, once it answers, goes on where it stopped", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.remoteDown = true;
    const runId = (await startOneShot(parent.id, { provider, prompt: "patience" })).runId;
    const failing = await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.attempts >= 2,
    );
    expect(failing).toMatchObject({ phase: "create", remote_id: null });
    expect(failing.last_error).toMatch(
      /^create the remote session: no answer \(TypeError: Network connection lost\.\)$/,
    );
    expect((await runOf(parent.id, runId)).state).toBe("running");
    expect((await api("GET", `/v1/sessions/${parent.id}`)).body).toMatchObject({ status: "waiting" });
    // an alarm stands for the next try
    expect(await sqlRows(parent.id, "SELECT 1 FROM remote_runs WHERE next_at > 0")).toHaveLength(1);

    net.remoteDown = false;
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({
      output: [{ type: "text", text: "echo: patience" }],
      stopReason: "completed",
    });
    const done = await transportOf(parent.id, runId);
    expect(done).toMatchObject({ phase: "done", attempts: 0, last_error: null });
    // the remote session, recorded once, for transcripts and listings
    const counterpart = (await allEvents(parent.id)).filter((e) => e.type === "subagent/remote");
    expect(counterpart.map((e) => e.data)).toEqual([{ runId, kind: "remote", remoteId: done.remote_id }]);
    expect((await api("GET", `/v1/sessions/${parent.id}`)).body).toMatchObject({ status: "idle" });
  });

  it("never starts twice when answers are lost: the create and the prompt are idempotent by run id", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.dropCallbacks = true; // no callback may settle the run before the prompt's retry
    const lost = new Set<string>();
    // lose the first answer of the create and of the prompt, after they reached the remote
    net.loseAnswer = (c) => {
      const kind = c.path === "/v1/sessions" ? "create" : c.path.endsWith("/messages") ? "prompt" : "";
      if (!kind || lost.has(kind) || c.host !== "remote.test") return false;
      lost.add(kind);
      return true;
    };
    const runId = (await startOneShot(parent.id, { provider, prompt: "only once" })).runId;
    const run = await waitForRun(parent.id, runId);
    expect(run.result.output).toEqual([{ type: "text", text: "echo: only once" }]);
    const remoteId = await remoteIdOf(parent.id, runId);
    const creates = net.calls.filter((c) => c.path === "/v1/sessions" && c.body.includes(`run:${runId}`));
    expect(creates.map((c) => c.status)).toEqual([201, 200]); // the replay answers the same session
    const prompts = net.calls.filter((c) => c.path === `/v1/sessions/${remoteId}/messages`);
    expect(prompts.map((c) => c.status)).toEqual([202, 202]);
    const remoteLog = await allEvents(remoteId!);
    expect(ofType(remoteLog, "user/message")).toHaveLength(1);
    expect(ofType(remoteLog, "turn/end")).toHaveLength(1);
    expect(ofType(await allEvents(parent.id), "subagent/end")).toHaveLength(1);
  });

  it("polls the remote's events with backoff when no callback arrives, and survives an eviction meanwhile", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.dropCallbacks = true;
    const runId = (
      await startOneShot(parent.id, { provider, prompt: script({ think: 1500 }, { say: "from afar" }) })
    ).runId;
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    await evictDurableObject(stub(parent.id));
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({ output: [{ type: "text", text: "from afar" }], stopReason: "completed" });
    const remoteId = await remoteIdOf(parent.id, runId);
    const polls = net.calls.filter((c) => c.path.startsWith(`/v1/sessions/${remoteId}/events?after=`));
    expect(polls.length).toBeGreaterThanOrEqual(2);
    // the cursor moves: later polls ask only for what is new
    expect(polls[0]!.path).toContain("after=-1");
    expect(new Set(polls.map((c) => c.path)).size).toBeGreaterThan(1);
    expect(ofType(await allEvents(parent.id), "subagent/end")).toHaveLength(1);
    expect((await transportOf(parent.id, runId)).phase).toBe("done");
  });

  it("ends a run as error at once when the remote refuses it (a wrong token), without retrying or leaking", async () => {
    const wrong = `wrong-token-${crypto.randomUUID()}`;
    const provider = await registerRemote(wrong);
    const parent = await createSession();
    const runId = (await startOneShot(parent.id, { provider, prompt: "x" })).runId;
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic: "the remote deployment did not create the remote session: HTTP 401 UNAUTHENTICATED",
    });
    expect(
      net.calls.filter((c) => c.path === "/v1/sessions" && c.body.includes(`run:${runId}`)),
    ).toHaveLength(1);
    expect(JSON.stringify(await allEvents(parent.id))).not.toContain(wrong);
    expect(await transportOf(parent.id, runId)).toMatchObject({ phase: "done" });
  });

  it("ends a run whose remote vanished as error after the deadline since its last successful answer", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.dropCallbacks = true;
    const runId = (
      await startOneShot(parent.id, { provider, prompt: script({ think: 60_000 }, { say: "never" }) })
    ).runId;
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    net.remoteDown = true; // it vanishes mid-run
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.attempts >= 1,
    );
    expect((await runOf(parent.id, runId)).state).toBe("running");
    vi.setSystemTime(Date.now() + 601_000); // REMOTE_DEADLINE_SECONDS is 600 in wrangler.toml
    await runDurableObjectAlarm(stub(parent.id));
    const run = await waitForRun(parent.id, runId);
    expect(run.result.stopReason).toBe("error");
    expect(run.result.output).toEqual([]);
    expect(run.result.diagnostic).toMatch(
      /^the remote deployment gave no successful answer for 600 s \(last: show the session's events: no answer/,
    );
    expect(run.result.diagnostic).not.toContain(ADMIN);
    // it then tries (bounded) to stop the remote session, which may still be running
    expect((await transportOf(parent.id, runId)).phase).toBe("interrupt");
    net.remoteDown = false;
    vi.setSystemTime(Date.now() + 60_000); // the next try is due (its time was taken on the moved clock)
    await runDurableObjectAlarm(stub(parent.id));
    const remoteId = await remoteIdOf(parent.id, runId);
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "done",
      { timeoutMs: 15_000 },
    );
    vi.useRealTimers();
    expect(net.calls.some((c) => c.path === `/v1/sessions/${remoteId}/interrupt` && c.status === 202)).toBe(
      true,
    );
  });

  it("a cancellation settles the run aborted at once and interrupts the remote session", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    const runId = (
      await startOneShot(parent.id, { provider, prompt: script({ think: 5000 }, { say: "too late" }) })
    ).runId;
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "await",
    );
    const remoteId = await remoteIdOf(parent.id, runId);
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${runId}`)).status).toBe(202);
    const run = await waitForRun(parent.id, runId, 3_000);
    expect(run.result).toEqual({
      output: [],
      stopReason: "aborted",
      diagnostic: "the run was cancelled by its parent",
    });
    await eventually(
      () => transportOf(parent.id, runId),
      (t) => t.phase === "done",
    );
    expect(
      net.calls.filter((c) => c.path === `/v1/sessions/${remoteId}/interrupt`).map((c) => c.status),
    ).toEqual([202]);
    // the remote's turn ended aborted; its callback was refused as replayed and counted delivered
    const remoteLog = await eventually(
      () => allEvents(remoteId!),
      (es) => ofType(es, "turn/end").length === 1,
    );
    expect(ofType(remoteLog, "turn/end")[0]!.data).toMatchObject({ reason: "aborted" });
    const outbox = await eventually(
      async () => ((await api("GET", `/v1/sessions/${remoteId}/outbox`)).body as any).entries,
      (entries: any[]) => entries[0]?.state === "delivered",
    );
    expect(outbox[0]).toMatchObject({ kind: "callback", state: "delivered" });
    expect(ofType(await allEvents(parent.id), "subagent/end").map((e) => (e.data as any).stopReason)).toEqual(
      ["aborted"],
    );
  });

  it("a cancellation before the remote session exists settles aborted and calls nothing more", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    net.remoteDown = true;
    const runId = (await startOneShot(parent.id, { provider, prompt: "never sent" })).runId;
    await api("DELETE", `/v1/sessions/${parent.id}/runs/${runId}`);
    const run = await waitForRun(parent.id, runId, 5_000);
    expect(run.result.stopReason).toBe("aborted");
    expect(await transportOf(parent.id, runId)).toMatchObject({ phase: "done", remote_id: null });
    net.remoteDown = false;
    await sleep(300);
    expect(net.calls.filter((c) => c.body.includes(`run:${runId}`) && c.status !== "down")).toEqual([]);
  });
});

describe("sessions created for another deployment (semantics.md §10.1, §12.3)", () => {
  it("answer an idempotent create with the same session and no token; another body is refused", async () => {
    const body = { label: "for a", idempotencyKey: `key-${crypto.randomUUID()}` };
    const first = await api("POST", "/v1/sessions", { body });
    expect(first.status).toBe(201);
    expect((first.body as any).token).toEqual(expect.any(String));
    const again = await api("POST", "/v1/sessions", { body });
    expect(again.status).toBe(200);
    expect((again.body as any).id).toBe((first.body as any).id);
    expect((again.body as any).token).toBeUndefined();
    const other = await api("POST", "/v1/sessions", { body: { ...body, label: "another" } });
    expect([other.status, (other.body as any).error.code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    // the same key in another tenant is another session
    const acme = await api("POST", "/v1/sessions", { body, token: "tenant-acme-admin-token" });
    expect(acme.status).toBe(201);
    expect((acme.body as any).id).not.toBe((first.body as any).id);
    // the session token of the first create still works
    expect(
      (await api("GET", `/v1/sessions/${(first.body as any).id}`, { token: (first.body as any).token }))
        .status,
    ).toBe(200);
  });

  it("validate the callback strictly and never show its secret", async () => {
    const secret = `callback-secret-${crypto.randomUUID()}`;
    for (const callback of [
      { url: "http://parent.example.com/cb", secret },
      { url: "https://parent.example.com/cb", secret: "short" },
      { url: "https://parent.example.com/cb" },
      { url: "https://parent.example.com/cb", secret, extra: true },
      "https://parent.example.com/cb",
    ]) {
      const res = await api("POST", "/v1/sessions", { body: { callback } });
      expect([res.status, (res.body as any).error.code]).toEqual([400, "INVALID_REQUEST"]);
    }
    const made = await api("POST", "/v1/sessions", {
      body: { callback: { url: "http://127.0.0.1:9/cb", secret }, delegationDepth: 2 },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ delegationDepth: 2 });
    const id = (made.body as any).id;
    expect(JSON.stringify(made.body)).not.toContain(secret);
    expect(JSON.stringify((await api("GET", `/v1/sessions/${id}`)).body)).not.toContain(secret);
    const tooDeep = await api("POST", "/v1/sessions", { body: { delegationDepth: 65 } });
    expect(tooDeep.status).toBe(400);
  });
});
