import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { sleep } from "../../support/logs";
import { registryStub } from "../../support/objects";

describe("the session directory", () => {
  it("lists top-level sessions newest first, paged by cursor, admin only", async () => {
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(await createSession({ label: `dir-${i}` }));
      await sleep(5);
    }
    const first = await api("GET", "/v1/sessions?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.sessions.map((s: any) => s.id)).toEqual([made[2]!.id, made[1]!.id]);
    expect(first.body.sessions[0]).toMatchObject({ label: "dir-2", createdAt: expect.any(Number) });
    const second = await api("GET", `/v1/sessions?limit=2&cursor=${encodeURIComponent(first.body.next)}`);
    expect(second.body.sessions.map((s: any) => s.id)[0]).toBe(made[0]!.id);
    const asSession = await api("GET", "/v1/sessions", { token: made[0]!.token });
    expect(asSession.status).toBe(403);
    const badCursor = await api("GET", "/v1/sessions?cursor=nope");
    expect(badCursor.status).toBe(400);
    const started = await api("POST", `/v1/sessions/${made[0]!.id}/subagents`, {
      body: { provider: "spawn", prompt: "x", mode: "one-shot" },
    });
    const all = await api("GET", "/v1/sessions?limit=200");
    expect(all.body.sessions.map((s: any) => s.id)).not.toContain(started.body.id);
  });

  it("a create retried with its idempotency key puts a session its first attempt left unlisted in the directory", async () => {
    const key = `directory-${crypto.randomUUID()}`;
    const first = await api("POST", "/v1/sessions", { body: { idempotencyKey: key, label: "listed again" } });
    expect(first.status).toBe(201);
    const id = (first.body as { id: string }).id;
    const listed = async () =>
      ((await api("GET", "/v1/sessions?limit=200")).body as { sessions: { id: string }[] }).sessions.some(
        (s) => s.id === id,
      );
    expect(await listed()).toBe(true);
    // the state a directory write that failed after the session existed leaves behind
    await runInDurableObject(registryStub(), (_instance: unknown, state: DurableObjectState) => {
      state.storage.sql.exec("DELETE FROM sessions WHERE id = ?", id);
    });
    expect(await listed()).toBe(false);
    const retried = await api("POST", "/v1/sessions", {
      body: { idempotencyKey: key, label: "listed again" },
    });
    expect(retried.status).toBe(200);
    expect((retried.body as { id: string }).id).toBe(id);
    expect(await listed()).toBe(true);
  });
});
