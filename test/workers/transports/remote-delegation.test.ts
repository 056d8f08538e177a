import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN, api, createSession, startOneShot, waitForRun } from "../../support/api";
import { allEvents, ofType, waitForEvents } from "../../support/logs";
import { sqlRows } from "../../support/objects";
import {
  expectNoCredential,
  installRemoteNet,
  registerRemote,
  remoteIdOf,
  type RemoteNet,
  secretOf,
} from "../../support/remote";
import { script } from "../../support/scripts";

/**
 * Remote delegation end to end inside workerd: the Worker plays both deployments
 * (test/support/remote.ts), so a run goes out over "HTTP" (create, prompt), the remote session answers, and its signed
 * callback comes back to the parent. The run is published at once with a parent-scoped id, its
 * result arrives exactly once, and no credential leaves the parent's transport row.
 */

let net: RemoteNet;
beforeAll(() => {
  net = installRemoteNet();
});
afterAll(() => net.restore());
afterEach(() => {
  net.remoteDown = false;
  net.dropCallbacks = false;
});

describe("remote delegation inside workerd (semantics.md §12.1, §12.2)", () => {
  it("publishes a parent-scoped run at once and gets the remote's one result back through the signed callback", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    const started = await startOneShot(parent.id, { provider, prompt: "hello there", label: "far" });
    expect(started).toEqual({ runId: started.runId, id: `remote:${started.runId}`, local: false });
    const run = await waitForRun(parent.id, started.runId);
    expect(run).toEqual({
      runId: started.runId,
      id: `remote:${started.runId}`,
      provider,
      local: false,
      state: "settled",
      result: { output: [{ type: "text", text: "echo: hello there" }], stopReason: "completed" },
      counterpart: { kind: "remote", id: expect.any(String) },
    });

    // the remote session: created once, top-level there, one level deeper, with the run's label
    const remoteId = await remoteIdOf(parent.id, started.runId);
    expect(run.counterpart.id).toBe(remoteId);
    expect(remoteId).not.toBeNull();
    expect(run.id).not.toBe(remoteId);
    expect(run.id).not.toContain(remoteId!);
    const remoteView = await api("GET", `/v1/sessions/${remoteId}`);
    expect(remoteView.body).toMatchObject({
      parentSession: null,
      delegationDepth: 1,
      label: "far",
      status: "idle",
    });
    const remoteLog = await allEvents(remoteId!);
    expect(ofType(remoteLog, "user/message")).toHaveLength(1);

    // exactly: create, prompt, one callback (nothing polled it: the callback came first)
    const mine = net.calls.filter((c) => c.path.includes(started.runId) || c.path.includes(remoteId!));
    expect(mine.map((c) => [c.host, c.method, c.path.split("?")[0], c.status])).toEqual([
      ["remote.test", "POST", `/v1/sessions/${remoteId}/messages`, 202],
      ["parent.test", "POST", `/v1/callbacks/${parent.id}/${started.runId}`, 200],
    ]);
    const creates = net.calls.filter(
      (c) => c.path === "/v1/sessions" && c.body.includes(`run:${started.runId}`),
    );
    expect(creates).toHaveLength(1);

    // the parent's log: start before end, same run id, local false, on the parent only
    const events = await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 1);
    expect(ofType(events, "subagent/start").map((e) => e.data)).toEqual([
      { runId: started.runId, provider, id: `remote:${started.runId}`, local: false },
    ]);
    expect(ofType(events, "subagent/end").map((e) => e.data)).toEqual([
      {
        runId: started.runId,
        provider,
        id: `remote:${started.runId}`,
        local: false,
        stopReason: "completed",
        lastAssistantMessage: [{ type: "text", text: "echo: hello there" }],
      },
    ]);
    // not session-backed here: absent from the parent's listings
    expect((await api("GET", `/v1/sessions/${parent.id}/children`)).body).toEqual({ entries: [] });
    expect((await api("GET", `/v1/sessions/${parent.id}/outbox`)).body).toEqual({ entries: [] });
    // the remote's outbox shows its callback delivered
    const remoteOutbox = (await api("GET", `/v1/sessions/${remoteId}/outbox`)).body as any;
    expect(remoteOutbox.entries).toEqual([
      { id: `callback:${remoteId}`, target: "callback", kind: "callback", attempts: 0, state: "delivered" },
    ]);
  });

  it("leaks no provider token or callback secret into events, views, outboxes, diagnostics or logs", async () => {
    const logged: string[] = [];
    const spies = (["log", "error", "warn", "info"] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(args.map(String).join(" "));
      }),
    );
    try {
      const provider = await registerRemote();
      const parent = await createSession();
      const ok = await startOneShot(parent.id, { provider, prompt: "fine" });
      const failing = await startOneShot(parent.id, {
        provider,
        prompt: script({ fail: "the model broke" }),
      });
      const okRun = await waitForRun(parent.id, ok.runId);
      const failedRun = await waitForRun(parent.id, failing.runId);
      expect(failedRun.result).toEqual({ output: [], stopReason: "error", diagnostic: "the model broke" });
      const credentials = [
        ADMIN,
        await secretOf(parent.id, ok.runId),
        await secretOf(parent.id, failing.runId),
      ];
      const remoteIds = [await remoteIdOf(parent.id, ok.runId), await remoteIdOf(parent.id, failing.runId)];

      const visible = JSON.stringify([
        okRun,
        failedRun,
        await allEvents(parent.id),
        (await api("GET", `/v1/sessions/${parent.id}`)).body,
        (await api("GET", "/v1/providers")).body,
        ...(await Promise.all(
          remoteIds.map(async (id) => [
            await allEvents(id!),
            (await api("GET", `/v1/sessions/${id}`)).body,
            (await api("GET", `/v1/sessions/${id}/outbox`)).body,
          ]),
        )),
      ]);
      for (const credential of credentials) expect(visible).not.toContain(credential);
      // stored: the token and the secret only in the parent's transport row, the secret in the
      // remote's header (it signs with it), nowhere else
      await expectNoCredential(parent.id, credentials);
      for (const id of remoteIds) await expectNoCredential(id!, credentials);
      const [row] = await sqlRows<{ token: string; secret: string }>(
        parent.id,
        "SELECT token, secret FROM remote_runs WHERE run_id = ?",
        ok.runId,
      );
      expect(row).toEqual({ token: ADMIN, secret: credentials[1] });
      for (const line of logged) for (const credential of credentials) expect(line).not.toContain(credential);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it("lets the model delegate to a remote provider in the foreground and as a background task", async () => {
    const provider = await registerRemote();
    const root = await createSession({ providers: [provider], backgroundMode: "one-shot" });
    const tool = "subagent"; // the session's only provider gets the plain name
    const tools = (await api("GET", "/v1/providers")).body as any;
    expect(tools.providers.find((p: any) => p.name === provider)).toMatchObject({
      local: false,
      continuable: false,
    });
    await api("POST", `/v1/sessions/${root.id}/messages`, {
      body: {
        content: script(
          { call: [{ tool, args: { description: "fg", prompt: "front" } }] },
          { call: [{ tool, args: { description: "bg", prompt: "back", run_in_background: true } }] },
          { say: "done" },
        ),
      },
    });
    const log = await waitForEvents(root.id, (es) => ofType(es, "turn/end").length === 1, {
      timeoutMs: 15_000,
    });
    const results = ofType(log, "tool/result").map((e) => e.data);
    expect(results).toEqual([
      expect.objectContaining({ isError: false, content: [{ type: "text", text: "echo: front" }] }),
      expect.objectContaining({
        isError: false,
        content: [{ type: "text", text: "started background subagent task subagent-1" }],
      }),
    ]);
    // the background task settles too, through the same transport
    const done = await waitForEvents(root.id, (es) => ofType(es, "subagent/end").length === 2, {
      timeoutMs: 15_000,
    });
    expect(ofType(done, "subagent/end").map((e) => (e.data as any).lastAssistantMessage)).toEqual([
      [{ type: "text", text: "echo: front" }],
      [{ type: "text", text: "echo: back" }],
    ]);
  });

  it("creates the remote session in the parent's jurisdiction and refuses to leave it", async () => {
    const provider = await registerRemote();
    const parent = await createSession({ jurisdiction: "eu" });
    const started = await startOneShot(parent.id, { provider, prompt: "gdpr", locationHint: "weur" });
    await waitForRun(parent.id, started.runId);
    const remoteId = await remoteIdOf(parent.id, started.runId);
    expect((await api("GET", `/v1/sessions/${remoteId}`)).body).toMatchObject({
      jurisdiction: "eu",
      locationHint: "weur",
    });
    const out = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider, prompt: "x", mode: "one-shot", jurisdiction: "fedramp" },
    });
    expect([out.status, (out.body as any).error.code]).toEqual([400, "INVALID_REQUEST"]);
  });

  it("a remote's start-time refusals are the catalogue's: no capabilities, no childId, no continuable", async () => {
    const provider = await registerRemote();
    const parent = await createSession();
    for (const [extra, code] of [
      [{ maxDepth: 2 }, "UNSUPPORTED_CAPABILITY"],
      [{ outputSchema: { type: "object" } }, "UNSUPPORTED_CAPABILITY"],
      [{ toolFilter: { allow: ["echo"] } }, "UNSUPPORTED_CAPABILITY"],
      [{ persona: "p" }, "UNSUPPORTED_CAPABILITY"],
      [{ childId: crypto.randomUUID() }, "INVALID_REQUEST"],
    ] as const) {
      const res = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
        body: { provider, prompt: "x", mode: "one-shot", ...extra },
      });
      expect((res.body as any).error.code).toBe(code);
    }
    const cont = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider, prompt: "x", mode: "continuable", label: "c" },
    });
    expect((cont.body as any).error.code).toBe("UNSUPPORTED_CAPABILITY");
    expect(await sqlRows(parent.id, "SELECT run_id FROM runs")).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT run_id FROM remote_runs")).toEqual([]);
  });
});
