import { describe, expect, it } from "vitest";
import { api, createSession, field, sendMessage, UUID } from "../../support/api";
import { allEvents, count, waitForEvents, waitForTurnEnds, type WireEvent } from "../../support/logs";
import { tablesHash } from "../../support/objects";
import { script } from "../../support/scripts";

async function page(
  id: string,
  query: string,
  token?: string,
): Promise<{ events: WireEvent[]; next: number | null }> {
  const res = await api("GET", `/v1/sessions/${id}/events${query}`, token === undefined ? {} : { token });
  expect(res.status).toBe(200);
  expect(Object.keys(res.body as object).sort()).toEqual(["events", "next"]);
  return { events: field<WireEvent[]>(res.body, "events"), next: field<number | null>(res.body, "next") };
}

describe("a session's own view, its token's reach, and event paging (semantics.md §1.4, §1.5, §7.1)", () => {
  it("describes a session with the fields of api.md and reports running while a turn is open, idle after", async () => {
    const before = Date.now();
    const { id, token } = await createSession({ label: "described" });
    expect(id).toMatch(UUID);
    expect(token.length).toBeGreaterThan(16);

    const idle = await api("GET", `/v1/sessions/${id}`);
    expect(idle.status).toBe(200);
    expect(idle.body).toMatchObject({
      id,
      parentSession: null,
      origin: null,
      delegationDepth: 0,
      status: "idle",
      label: "described",
    });
    const createdAt = field<number>(idle.body, "createdAt");
    expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 1000);
    // a top-level session is no child: no seed and no delegation mode
    expect(idle.body).not.toHaveProperty("seedLength");
    expect(idle.body).not.toHaveProperty("mode");
    expect(JSON.stringify(idle.body)).not.toContain(token);

    await sendMessage(id, script({ think: 800 }, { say: "done" }));
    await waitForEvents(id, (es) => count(es, "turn/start") === 1);
    const running = await api("GET", `/v1/sessions/${id}`, { token });
    expect(running.status).toBe(200);
    expect(field(running.body, "status")).toBe("running");
    expect(field(running.body, "createdAt")).toBe(createdAt);

    await waitForTurnEnds(id, 1);
    const after = await api("GET", `/v1/sessions/${id}`, { token });
    expect(field(after.body, "status")).toBe("idle");
  });

  it("omits the label of a session created without one", async () => {
    const { id } = await createSession();
    const res = await api("GET", `/v1/sessions/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty("label");
    expect(field(res.body, "status")).toBe("idle");
  });

  it("lets a session token act on its own session and answers 404 on another session without touching it", async () => {
    const mine = await createSession();
    const other = await createSession();
    await sendMessage(other.id, "other's history");
    await waitForTurnEnds(other.id, 1);
    const otherBefore = await tablesHash(other.id);

    // its own session: read, send, page events, interrupt
    expect((await api("GET", `/v1/sessions/${mine.id}`, { token: mine.token })).status).toBe(200);
    const sent = await api("POST", `/v1/sessions/${mine.id}/messages`, {
      token: mine.token,
      body: { content: "mine" },
    });
    expect(sent.status).toBe(202);
    const events = await waitForTurnEnds(mine.id, 1);
    expect((await page(mine.id, "", mine.token)).events).toEqual(events);
    const stopped = await api("POST", `/v1/sessions/${mine.id}/interrupt`, { token: mine.token });
    expect(stopped.status).toBe(202);
    expect(stopped.body).toEqual({ accepted: true });

    // another session: the same calls learn nothing
    const attempts = [
      await api("GET", `/v1/sessions/${other.id}`, { token: mine.token }),
      await api("POST", `/v1/sessions/${other.id}/messages`, {
        token: mine.token,
        body: { content: "intrude" },
      }),
      await api("GET", `/v1/sessions/${other.id}/events`, { token: mine.token }),
      await api("POST", `/v1/sessions/${other.id}/interrupt`, { token: mine.token }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(404);
      expect(field(res.body, "error", "code")).toBe("NOT_FOUND");
    }
    // a token for another session reads the same as a session that does not exist
    const missing = await api("GET", "/v1/sessions/00000000-0000-4000-8000-000000000000", {
      token: mine.token,
    });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(attempts[0]!.body);
    expect(await tablesHash(other.id)).toBe(otherBefore);
    expect(count(await allEvents(other.id), "user/message")).toBe(1);
  });

  it("pages events with after and limit, and next is the last returned seq only while more events exist", async () => {
    const { id } = await createSession();
    await sendMessage(id, "first");
    await waitForTurnEnds(id, 1);
    await sendMessage(id, "second");
    const log = await waitForTurnEnds(id, 2);
    expect(log).toHaveLength(12);

    const p1 = await page(id, "?limit=5");
    expect(p1.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(p1.next).toBe(4);
    const p2 = await page(id, `?after=${p1.next}&limit=5`);
    expect(p2.events.map((e) => e.seq)).toEqual([5, 6, 7, 8, 9]);
    expect(p2.next).toBe(9);
    const p3 = await page(id, `?after=${p2.next}&limit=5`);
    expect(p3.events.map((e) => e.seq)).toEqual([10, 11]);
    expect(p3.next).toBeNull();
    expect([...p1.events, ...p2.events, ...p3.events]).toEqual(log);

    // a page that ends exactly on the last event has no next
    const exact = await page(id, "?after=5&limit=6");
    expect(exact.events.map((e) => e.seq)).toEqual([6, 7, 8, 9, 10, 11]);
    expect(exact.next).toBeNull();
    // past the end: nothing, no next
    expect(await page(id, "?after=11")).toEqual({ events: [], next: null });
    expect(await page(id, "?after=500&limit=500")).toEqual({ events: [], next: null });
    // defaults: from the start, up to 100
    const all = await page(id, "");
    expect(all).toEqual({ events: log, next: null });
    expect(await page(id, "?after=-1&limit=500")).toEqual(all);
    // every event has the documented shape
    for (const e of log) {
      expect(Object.keys(e).sort()).toEqual(["at", "data", "seq", "type"]);
      expect(typeof e.at).toBe("number");
      expect(typeof e.type).toBe("string");
    }
  });

  it("returns next when the default limit of 100 cuts the log", async () => {
    const { id } = await createSession();
    // 20 turns of 6 events each: 120 events
    for (let i = 0; i < 20; i++) await sendMessage(id, `m${i}`);
    await waitForTurnEnds(id, 20, 15_000);
    const first = await page(id, "");
    expect(first.events).toHaveLength(100);
    expect(first.next).toBe(99);
    const rest = await page(id, `?after=${first.next}`);
    expect(rest.events.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 100 + i));
    expect(rest.next).toBeNull();
  });
});
