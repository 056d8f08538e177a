import { describe, expect, it } from "vitest";
import { placedIdFromDigest } from "../../../src/core/placement";
import { sha256Hex } from "../../../src/core/hash";
import { ADMIN, api, type ApiResult, startRun, TENANT_ADMIN, waitForRun } from "../../support/api";

/**
 * Session ids are the tenant's own (semantics.md §10.1, §10.4): a keyed create's id is derived
 * from its tenant and key, and a caller-reserved `childId` names a child only under the parent
 * that reserves it. Tenant `acme` (TENANT_ADMIN) attacks tenant `default` (ADMIN): it cannot put a
 * child on the id default's next keyed create will use, cannot tell whether one of default's ids
 * exists by reserving it, and cannot reach default's session by its id.
 */

/** The id a keyed create of tenant `default` lands on: anyone who knows the key can compute it. */
async function keyedIdOfDefault(key: string): Promise<string> {
  return placedIdFromDigest(await sha256Hex(`default\n${key}`));
}

async function createAs(token: string, body: Record<string, unknown> = {}): Promise<ApiResult> {
  return api("POST", "/v1/sessions", { token, body });
}

/** Tenant acme's session, and a one-shot start under it with `childId`, as acme's admin. */
async function acmeStartsChild(childId: string): Promise<ApiResult> {
  const acme = await createAs(TENANT_ADMIN, { label: "acme" });
  expect(acme.status).toBe(201);
  return startRun(acme.body.id, { prompt: "squat", childId }, TENANT_ADMIN);
}

/** What a start's answer tells its caller, without the values that are fresh on every start. */
function shapeOf(res: ApiResult): unknown {
  return { status: res.status, keys: Object.keys(res.body ?? {}).sort(), local: res.body?.local };
}

describe("ids are the tenant's own", () => {
  it("a child another tenant starts on the id of default's next keyed create does not block that create", async () => {
    const key = `next-create-${crypto.randomUUID()}`;
    const target = await keyedIdOfDefault(key);

    const squat = await acmeStartsChild(target);
    expect(squat.status).toBe(201);

    const created = await createAs(ADMIN, { idempotencyKey: key, label: "mine" });
    expect({ status: created.status, code: created.body?.error?.code }).toEqual({
      status: 201,
      code: undefined,
    });
    expect(squat.body.id).not.toBe(target); // acme's reserved id named acme's child only
    expect(created.body.id).toBe(target);
    expect(typeof created.body.token).toBe("string");
    // the session on that id is default's, reached by default's admin and by its token
    expect((await api("GET", `/v1/sessions/${target}`, { token: ADMIN })).body.label).toBe("mine");
    expect((await api("GET", `/v1/sessions/${target}`, { token: created.body.token })).status).toBe(200);
    // a retry of the create answers the same session, without a token
    const retried = await createAs(ADMIN, { idempotencyKey: key, label: "mine" });
    expect({ status: retried.status, id: retried.body.id, token: retried.body.token }).toEqual({
      status: 200,
      id: target,
      token: undefined,
    });
  });

  it("reserving an id default uses answers exactly as reserving a fresh one: acme learns nothing and takes nothing", async () => {
    const theirs = await createAs(ADMIN, { label: "default's" });
    expect(theirs.status).toBe(201);
    const keyed = await createAs(ADMIN, { idempotencyKey: `exists-${crypto.randomUUID()}` });
    expect(keyed.status).toBe(201);

    for (const existing of [theirs.body.id, keyed.body.id]) {
      const onExisting = await acmeStartsChild(existing);
      const onFresh = await acmeStartsChild(crypto.randomUUID());
      expect(shapeOf(onExisting)).toEqual(shapeOf(onFresh));
      expect(onExisting.status).toBe(201);
      expect(onExisting.body.id).not.toBe(existing);
      // the child acme got is acme's own, and default's session is untouched
      expect((await api("GET", `/v1/sessions/${onExisting.body.id}`, { token: TENANT_ADMIN })).status).toBe(
        200,
      );
      const mine = await api("GET", `/v1/sessions/${existing}`, { token: ADMIN });
      expect({ status: mine.status, parent: mine.body.parentSession }).toEqual({ status: 200, parent: null });
    }
  });

  it("another tenant reaches default's session by its id no more than an id that does not exist", async () => {
    const theirs = await createAs(ADMIN, { label: "default's" });
    const missing = crypto.randomUUID();
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["GET", "/events", undefined],
      ["POST", "/messages", { content: "hello" }],
      ["POST", "/interrupt", undefined],
      ["DELETE", "", undefined],
    ] as const) {
      const onTheirs = await api(method, `/v1/sessions/${theirs.body.id}${suffix}`, {
        token: TENANT_ADMIN,
        body,
      });
      const onMissing = await api(method, `/v1/sessions/${missing}${suffix}`, { token: TENANT_ADMIN, body });
      expect({
        route: `${method} ${suffix}`,
        status: onTheirs.status,
        code: onTheirs.body?.error?.code,
      }).toEqual({
        route: `${method} ${suffix}`,
        status: onMissing.status,
        code: onMissing.body?.error?.code,
      });
    }
    expect((await api("GET", `/v1/sessions/${theirs.body.id}`, { token: ADMIN })).body.label).toBe(
      "default's",
    );
  });

  it("the same key in two tenants makes two sessions, each its tenant's", async () => {
    const key = `shared-${crypto.randomUUID()}`;
    const a = await createAs(ADMIN, { idempotencyKey: key });
    const b = await createAs(TENANT_ADMIN, { idempotencyKey: key });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    expect((await api("GET", `/v1/sessions/${b.body.id}`, { token: ADMIN })).status).toBe(404);
    expect((await api("GET", `/v1/sessions/${a.body.id}`, { token: TENANT_ADMIN })).status).toBe(404);
  });

  it("a reserved childId stays idempotent within its parent, and names another child under another parent", async () => {
    const one = await createAs(ADMIN);
    const two = await createAs(ADMIN);
    const childId = crypto.randomUUID();
    const first = await startRun(one.body.id, { prompt: "once", childId });
    const again = await startRun(one.body.id, { prompt: "once", childId });
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body); // the same run and child
    expect((await waitForRun(one.body.id, first.body.runId)).result.stopReason).toBe("completed");

    const elsewhere = await startRun(two.body.id, { prompt: "once", childId });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.id).not.toBe(first.body.id);
    // a grandchild reserved under that child with the same childId is another session again
    const nested = await startRun(elsewhere.body.id, { prompt: "deeper", childId });
    expect(nested.status).toBe(201);
    expect(new Set([first.body.id, elsewhere.body.id, nested.body.id]).size).toBe(3);
  });
});
