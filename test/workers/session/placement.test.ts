import { describe, expect, it } from "vitest";
import { jurisdictionOfId, LOCATION_HINTS, newPlacedId } from "../../../src/core/placement";
import { reservedId } from "../../support/ids";
import { api, createSession, startRun, waitForRun } from "../../support/api";
import { waitForEvents } from "../../support/logs";

/**
 * Placement: location hints and jurisdictions are validated, recorded in the header, shown in
 * views and listings, inherited (jurisdiction only) and never escaped. workerd implements neither
 * (the object is simply local), so these tests check the bookkeeping and the routing by id.
 */

describe("placement of sessions over HTTP (semantics.md §1.6)", () => {
  it("validates jurisdictions and location hints at POST /v1/sessions", async () => {
    for (const body of [
      { jurisdiction: "mars" },
      { jurisdiction: "EU" },
      { jurisdiction: "fedramp-high" },
      { locationHint: "moon" },
      { locationHint: "apac-ne" },
      { locationHint: 3 },
    ]) {
      const res = await api("POST", "/v1/sessions", { body });
      expect([res.status, res.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
    }
    for (const locationHint of LOCATION_HINTS) {
      const res = await api("POST", "/v1/sessions", { body: { locationHint } });
      expect(res.status).toBe(201);
      expect(res.body.locationHint).toBe(locationHint);
      expect(res.body.jurisdiction).toBeUndefined();
    }
  });

  it("records a top-level session's placement and shows it in its view and the directory", async () => {
    const eu = await createSession({ jurisdiction: "eu", locationHint: "weur", label: "gdpr" });
    expect(jurisdictionOfId(eu.id)).toBe("eu");
    const view = await api("GET", `/v1/sessions/${eu.id}`, { token: eu.token });
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ id: eu.id, jurisdiction: "eu", locationHint: "weur", label: "gdpr" });
    const plain = await createSession({ label: "anywhere" });
    const plainView = await api("GET", `/v1/sessions/${plain.id}`);
    expect(plainView.body.jurisdiction).toBeUndefined();
    expect(plainView.body.locationHint).toBeUndefined();

    const directory = await api("GET", "/v1/sessions?limit=200");
    const listed = directory.body.sessions.find((s: any) => s.id === eu.id);
    // the directory lives outside the jurisdiction: no label of a confined session is kept there
    expect(listed).toEqual({
      id: eu.id,
      createdAt: view.body.createdAt,
      jurisdiction: "eu",
      locationHint: "weur",
    });
    expect(directory.body.sessions.find((s: any) => s.id === plain.id)).toMatchObject({ label: "anywhere" });

    // it answers messages like any other session
    await api("POST", `/v1/sessions/${eu.id}/messages`, { body: { content: "bonjour" }, token: eu.token });
    await waitForEvents(eu.id, (es) => es.some((e) => e.type === "turn/end"));
  });

  it("children inherit the jurisdiction (not the hint), show it in views and listings, and cannot leave it", async () => {
    const root = await createSession({ jurisdiction: "eu", locationHint: "eeur" });
    const started = await startRun(root.id, { prompt: "hi", label: "one" });
    expect(started.status).toBe(201);
    const child = started.body.id;
    expect(jurisdictionOfId(child)).toBe("eu");
    await waitForRun(root.id, started.body.runId, 5_000);
    const childView = await api("GET", `/v1/sessions/${child}`);
    expect(childView.body).toMatchObject({ parentSession: root.id, jurisdiction: "eu" });
    expect(childView.body.locationHint).toBeUndefined();

    // a continuable child with its own hint, and a grandchild below it
    const cont = await api("POST", `/v1/sessions/${root.id}/subagents`, {
      body: { provider: "spawn", prompt: "hi", mode: "continuable", label: "two", locationHint: "weur" },
    });
    expect(cont.status).toBe(202);
    const contId = cont.body.childId;
    expect(jurisdictionOfId(contId)).toBe("eu");
    const grand = await startRun(contId, { prompt: "hi", label: "three" });
    expect(grand.status).toBe(201);
    expect(jurisdictionOfId(grand.body.id)).toBe("eu");
    await waitForRun(contId, grand.body.runId, 5_000);
    expect((await api("GET", `/v1/sessions/${grand.body.id}`)).body).toMatchObject({ jurisdiction: "eu" });

    const children = await api("GET", `/v1/sessions/${root.id}/children`);
    const byId = new Map(children.body.entries.map((e: any) => [e.id, e]));
    expect(byId.get(child)).toMatchObject({ kind: "child", jurisdiction: "eu" });
    expect(byId.get(contId)).toMatchObject({ kind: "child", jurisdiction: "eu", locationHint: "weur" });
    const descendants = await api("GET", `/v1/sessions/${root.id}/descendants`);
    expect(descendants.body.entries.find((e: any) => e.id === grand.body.id)).toMatchObject({
      jurisdiction: "eu",
      parentId: contId,
      depth: 2,
    });

    // leaving is refused, one-shot and continuable, and nothing is created
    const childId = crypto.randomUUID();
    const leave = await startRun(root.id, { prompt: "hi", jurisdiction: "fedramp", childId });
    expect([leave.status, leave.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
    expect(leave.body.error.message).toMatch(/cannot leave/);
    const escapeCont = await api("POST", `/v1/sessions/${contId}/subagents`, {
      body: { provider: "spawn", prompt: "x", mode: "continuable", label: "out", jurisdiction: "fedramp" },
    });
    expect([escapeCont.status, escapeCont.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
    for (const id of [childId, reservedId(root.id, childId, "eu"), reservedId(root.id, childId, "fedramp")]) {
      expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    }
    // a reserved id that names another jurisdiction is refused too
    const foreign = await startRun(root.id, { prompt: "hi", childId: newPlacedId("fedramp") });
    expect([foreign.status, foreign.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
    // naming the parent's own jurisdiction is fine
    const same = await startRun(root.id, { prompt: "hi", jurisdiction: "eu" });
    expect(same.status).toBe(201);
  });

  it("a free parent may place a child in a jurisdiction; the child's subtree stays there", async () => {
    const root = await createSession();
    const reserved = crypto.randomUUID();
    const started = await api("POST", `/v1/sessions/${root.id}/subagents`, {
      body: {
        provider: "spawn",
        prompt: "hi",
        mode: "continuable",
        label: "fed",
        childId: reserved,
        jurisdiction: "fedramp",
        locationHint: "enam",
      },
    });
    expect(started.status).toBe(202);
    const child = started.body.childId;
    // the reserved id names the child under this parent, in the jurisdiction (the answer names it)
    expect(child).not.toBe(reserved);
    expect(child).toBe(reservedId(root.id, reserved, "fedramp"));
    expect((await api("GET", `/v1/sessions/${child}`)).body).toMatchObject({
      jurisdiction: "fedramp",
      locationHint: "enam",
    });
    // the same reserved id again is the same child: refused as a duplicate
    const again = await api("POST", `/v1/sessions/${root.id}/subagents`, {
      body: {
        provider: "spawn",
        prompt: "hi",
        mode: "continuable",
        label: "fed",
        childId: reserved,
        jurisdiction: "fedramp",
      },
    });
    expect([again.status, again.body.error.code]).toEqual([409, "DUPLICATE_CHILD"]);
    // below it, no way back out
    const out = await startRun(child, { prompt: "hi", jurisdiction: "eu" });
    expect([out.status, out.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
    const inside = await startRun(child, { prompt: "hi" });
    expect(inside.status).toBe(201);
    expect(jurisdictionOfId(inside.body.id)).toBe("fedramp");
    // a reserved id naming a jurisdiction for a child placed in none is refused
    const stray = await startRun(root.id, { prompt: "hi", childId: newPlacedId("eu") });
    expect([stray.status, stray.body.error.code]).toEqual([400, "INVALID_REQUEST"]);
  });

  it("session tokens of confined sessions authenticate through the routed object", async () => {
    const eu = await createSession({ jurisdiction: "eu" });
    const own = await api("GET", `/v1/sessions/${eu.id}`, { token: eu.token });
    expect(own.status).toBe(200);
    const forged = `${eu.id}.${"x".repeat(43)}`;
    expect((await api("GET", `/v1/sessions/${eu.id}`, { token: forged })).status).toBe(401);
    const started = await startRun(eu.id, { prompt: "hi" }, eu.token);
    expect(started.status).toBe(201);
    expect((await api("GET", `/v1/sessions/${started.body.id}`, { token: eu.token })).status).toBe(200);
  });
});
