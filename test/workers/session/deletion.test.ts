import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { installFaults } from "../../../src/core/faults";
import {
  api,
  createSession,
  expectError,
  sendMessage,
  startChild,
  startOneShot,
  TENANT_ADMIN,
  waitForRun,
} from "../../support/api";
import { allEvents, eventually, ofType, waitForChild, waitForEvents } from "../../support/logs";
import { stub } from "../../support/objects";
import { LONG_TURN, script, toolCall } from "../../support/scripts";

/** Everything an object keeps: its tables (sqlite's own aside) with their row counts, and its alarm. */
async function storageOf(id: string): Promise<{ tables: Record<string, number>; alarm: number | null }> {
  return runInDurableObject(stub(id), async (_instance: unknown, state: DurableObjectState) => {
    const tables: Record<string, number> = {};
    for (const { name } of state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()) {
      if (name.startsWith("_cf_") || name.startsWith("sqlite_")) continue;
      tables[name] = state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${name}`).one().n;
    }
    return { tables, alarm: await state.storage.getAlarm() };
  });
}

/** Every route a client may call of session `id` (reads included), with its answer's status. */
async function routeStatuses(id: string, token?: string): Promise<number[]> {
  const as = token === undefined ? {} : { token };
  const calls: [string, string, unknown?][] = [
    ["GET", `/v1/sessions/${id}`],
    ["GET", `/v1/sessions/${id}/events`],
    ["POST", `/v1/sessions/${id}/messages`, { content: "hello?" }],
    ["POST", `/v1/sessions/${id}/interrupt`],
    ["GET", `/v1/sessions/${id}/approvals`],
    ["GET", `/v1/sessions/${id}/schedules`],
    ["POST", `/v1/sessions/${id}/schedules`, { cron: "* * * * *", content: "x" }],
    ["GET", `/v1/sessions/${id}/children`],
    ["GET", `/v1/sessions/${id}/descendants`],
    ["GET", `/v1/sessions/${id}/outbox`],
    ["POST", `/v1/sessions/${id}/compact`, {}],
    ["DELETE", `/v1/sessions/${id}`],
  ];
  const statuses: number[] = [];
  for (const [method, path, body] of calls)
    statuses.push((await api(method, path, { ...as, ...(body === undefined ? {} : { body }) })).status);
  return statuses;
}

/**
 * A root with two continuable children, one of them with a grandchild that waits for an approval
 * of `echo`; the other child is in a long turn with a message queued; root and child have schedules.
 */
async function busyTree() {
  const root = await createSession();
  const busy = await startChild(root.id, { prompt: LONG_TURN, label: "busy" });
  const gated = await startChild(root.id, {
    label: "gated",
    requireApproval: ["echo"],
    prompt: script(
      {
        call: [
          toolCall("subagent", {
            description: "grandchild",
            prompt: script({ call: [toolCall("echo", { text: "needs a yes" })] }),
            run_in_background: true,
          }),
        ],
      },
      { say: "started it" },
    ),
  });
  const grandchild = await waitForChild(gated.childId);
  await eventually(
    async () => (await api("GET", `/v1/sessions/${root.id}/approvals`)).body.approvals,
    (approvals: unknown[]) => approvals.length === 1,
    { what: "the grandchild's approval at the root" },
  );
  await api("POST", `/v1/sessions/${root.id}/subagents/${busy.childId}/messages`, {
    body: { content: "queued" },
  });
  expect(
    (
      await api("POST", `/v1/sessions/${root.id}/schedules`, {
        body: { cron: "0 9 * * *", content: "daily" },
      })
    ).status,
  ).toBe(201);
  await api("POST", `/v1/sessions/${root.id}/messages`, {
    body: { content: "later", notBefore: Date.now() + 3_600_000 },
  });
  await sendMessage(root.id, LONG_TURN); // the root is busy too
  return { root, members: [root.id, busy.childId, gated.childId, grandchild] };
}

describe("DELETE /v1/sessions/:id deletes a whole tree (README 'Deleting sessions')", () => {
  it("a root, two children and a grandchild with pending work, schedules and an approval: every route of every member is 404 from the answer on, and no object keeps a row or an alarm", async () => {
    const { root, members } = await busyTree();
    for (const id of members) expect((await storageOf(id)).tables.events).toBeGreaterThan(0);
    const deleted = await api("DELETE", `/v1/sessions/${root.id}`);
    expect(deleted.status).toBe(202);
    expect(deleted.body).toEqual({ accepted: true });
    for (const id of members) {
      expect(await routeStatuses(id), id).toEqual(Array(12).fill(404));
      expect(await routeStatuses(id, root.token), id).toSatisfy((s: number[]) =>
        s.every((x) => x === 404 || x === 401),
      );
    }
    for (const id of members) {
      await eventually(
        () => storageOf(id),
        (s) => Object.keys(s.tables).length === 0 && s.alarm === null,
        {
          what: `the erasure of ${id}`,
          timeoutMs: 20_000,
        },
      );
    }
    const directory = await api("GET", "/v1/sessions?limit=200");
    expect(directory.body.sessions.map((s: { id: string }) => s.id)).not.toContain(root.id);
  });

  it("a descendant is deleted with its tree's token: its run ends aborted, it leaves its parent's listings, and the parent goes on", async () => {
    const root = await createSession();
    const run = await startOneShot(root.id, { prompt: LONG_TURN });
    const child = await startChild(root.id, { prompt: "hi", label: "keep" });
    expect((await api("DELETE", `/v1/sessions/${run.id}`, { token: root.token })).status).toBe(202);
    const settled = await waitForRun(root.id, run.runId);
    expect(settled.result).toMatchObject({ stopReason: "aborted", diagnostic: "the child was deleted" });
    const listed = await api("GET", `/v1/sessions/${root.id}/children`);
    expect(listed.body.entries.map((e: { id: string }) => e.id)).toEqual([child.childId]);
    await eventually(
      () => storageOf(run.id),
      (s) => Object.keys(s.tables).length === 0,
      { what: "the erasure" },
    );
    expect((await api("GET", `/v1/sessions/${root.id}`)).status).toBe(200);
    await sendMessage(root.id, "still here");
    await waitForEvents(root.id, (es) =>
      ofType(es, "assistant/message").some((e) => JSON.stringify(e.data.content).includes("still here")),
    );
  });

  it("a descendant deleted with a pending approval: the approval ends denied in its ancestors' logs too, and leaves their lists", async () => {
    const root = await createSession();
    const child = await startChild(root.id, {
      label: "gated",
      requireApproval: ["echo"],
      prompt: script({ call: [toolCall("echo", { text: "needs a yes" })] }),
    });
    const [approval] = await eventually<{ approvalId: string }[]>(
      async () => (await api("GET", `/v1/sessions/${root.id}/approvals`)).body.approvals,
      (approvals: unknown[]) => approvals.length === 1,
      { what: "the child's approval at the root" },
    );
    expect((await api("DELETE", `/v1/sessions/${child.childId}`, { token: root.token })).status).toBe(202);
    await eventually(
      async () => (await api("GET", `/v1/sessions/${root.id}/approvals`)).body.approvals,
      (approvals: unknown[]) => approvals.length === 0,
      { what: "the approval leaving the root's list" },
    );
    const decided = ofType(await allEvents(root.id), "approval/decided");
    expect(decided.map((e) => [e.data.approvalId, e.data.decision])).toEqual([
      [approval!.approvalId, "deny"],
    ]);
    await eventually(
      () => storageOf(child.childId),
      (s) => Object.keys(s.tables).length === 0,
      {
        what: "the erasure",
      },
    );
  });

  it("a top-level session's own token may not delete it (403), another tree's is 404, another tenant's admin is 404; an admin may, once (then 404)", async () => {
    const { id, token } = await createSession();
    const other = await createSession();
    expectError(await api("DELETE", `/v1/sessions/${id}`, { token }), 403, "UNAUTHORIZED");
    expectError(await api("DELETE", `/v1/sessions/${id}`, { token: other.token }), 404, "NOT_FOUND");
    expectError(await api("DELETE", `/v1/sessions/${id}`, { token: TENANT_ADMIN }), 404, "NOT_FOUND");
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(202);
    expectError(await api("DELETE", `/v1/sessions/${id}`), 404, "NOT_FOUND");
    expectError(await api("DELETE", "/v1/sessions/not-a-session"), 404, "NOT_FOUND");
  });

  it("a deletion that crashes after leaving the directory, before erasing, finishes on its own", async () => {
    const root = await createSession();
    const child = await startChild(root.id, { prompt: "hi" });
    await waitForEvents(child.childId, (es) => es.some((e) => e.type === "turn/end"));
    let crashes = 0;
    const remove = installFaults(root.id, (point) => {
      if (point === "mid-delete" && crashes++ === 0) throw new Error("crashed by the test");
    });
    try {
      expect((await api("DELETE", `/v1/sessions/${root.id}`)).status).toBe(202);
      for (const id of [root.id, child.childId])
        await eventually(
          () => storageOf(id),
          (s) => Object.keys(s.tables).length === 0 && s.alarm === null,
          {
            what: `the erasure of ${id}`,
            timeoutMs: 20_000,
          },
        );
      expect(crashes).toBeGreaterThanOrEqual(2);
    } finally {
      remove();
    }
  });

  it("the events of a deleted tree are gone too: a reader of the log gets 404, a stream is refused", async () => {
    const root = await createSession();
    await sendMessage(root.id, "hello");
    await waitForEvents(root.id, (es) => es.some((e) => e.type === "turn/end"));
    expect((await allEvents(root.id)).length).toBeGreaterThan(0);
    await api("DELETE", `/v1/sessions/${root.id}`);
    const stream = await api("GET", `/v1/sessions/${root.id}/events/stream`, {
      headers: { accept: "text/event-stream" },
    });
    expect(stream.status).toBe(404);
  });
});
