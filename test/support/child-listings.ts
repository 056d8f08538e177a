import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import type { ChildInit } from "../../src/contract/child-init";
import { api, startChild, startOneShot, waitForRun } from "./api";
import { settledTimes } from "./logs";
import { tablesIn } from "../../durable-objects/store/schema";
import { evict, sqlRows, stub, useFirstUseTables } from "./objects";

/**
 * The listings of a session's children (`GET /v1/sessions/:id/children` and `/descendants`,
 * semantics.md §9): reading them, settled children to list, the rows they are expected to show,
 * and ways to break a child the listing must survive (edited descriptors, rows naming objects that
 * never existed, children created with `init` past the depth cap).
 */

export type Entry = Record<string, any>;

async function listing(route: "children" | "descendants", id: string, token?: string): Promise<Entry[]> {
  const res = await api("GET", `/v1/sessions/${id}/${route}`, token === undefined ? {} : { token });
  if (res.status !== 200) throw new Error(`${route} of ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  expect(Object.keys(res.body)).toEqual(["entries"]);
  return res.body.entries;
}

export const children = (id: string, token?: string) => listing("children", id, token);
export const descendants = (id: string, token?: string) => listing("descendants", id, token);

/** Starts a one-shot child over HTTP and waits until its parent recorded the result. */
export async function settledOneShot(parent: string, body: Record<string, unknown> = {}): Promise<string> {
  const { runId, id } = await startOneShot(parent, { prompt: "hi", ...body });
  await waitForRun(parent, runId);
  return id;
}

/** Starts a continuable child over HTTP and waits until its epoch settled. */
export async function settledContinuable(
  parent: string,
  label: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const { childId } = await startChild(parent, { prompt: "hi", label, ...body });
  await settledTimes(parent, childId);
  return childId;
}

/** Sets the `created_at` of rows of a parent's children table (the createdAt the listing shows). */
export async function setCreatedAt(parent: string, times: Record<string, number>): Promise<void> {
  for (const [childId, at] of Object.entries(times))
    await sqlRows(parent, "UPDATE children SET created_at = ? WHERE child_id = ?", at, childId);
}

/**
 * Makes a session's listing facts throw: its children table is moved away under a live instance
 * that knows it has one (created, then the object restarted, so it opened with the table), so
 * its next count of children fails. `restoreChildrenTable` moves it back.
 */
export async function breakChildrenTable(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    useFirstUseTables(state.storage.sql),
  );
  await evict(id);
  await sqlRows(id, "ALTER TABLE children RENAME TO children_moved");
}

export async function restoreChildrenTable(id: string): Promise<void> {
  await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) => {
    state.storage.sql.exec("ALTER TABLE children_moved RENAME TO children");
  });
}

/**
 * Inserts a row into a parent's children table (the object it names need not exist). When the
 * parent had no children table yet, its live instance does not know of the one made here (every
 * write of the product goes through its stores), so it is evicted: a restart opens with it.
 */
export async function insertChildRow(
  parent: string,
  childId: string,
  createdAt: number,
  label: string | null = null,
) {
  const had = await runInDurableObject(stub(parent), (_instance: unknown, state: DurableObjectState) => {
    const { sql } = state.storage;
    const existed = tablesIn(sql).has("children");
    useFirstUseTables(sql);
    sql.exec(
      "INSERT INTO children (child_id, provider, mode, label, created_at, state) VALUES (?, 'spawn', 'one-shot', ?, ?, 'released')",
      childId,
      label,
      createdAt,
    );
    return existed;
  });
  if (!had) await evict(parent);
}

/**
 * Rewrites the payload of every descriptor event of a child's log, then evicts it (the log never
 * changes a row, so the instance's copy of its tail would not see the rewrite).
 */
export async function rewriteDescriptor(id: string, data: unknown): Promise<void> {
  const rows = await sqlRows(
    id,
    "UPDATE events SET data = ? WHERE type = 'subagent/descriptor' RETURNING seq",
    JSON.stringify(data),
  );
  expect(rows.length).toBeGreaterThan(0);
  await evict(id);
}

/** Appends a descriptor event to a (settled) child's log, then evicts it (its next seq and tail). */
export async function appendDescriptor(id: string, data: unknown): Promise<void> {
  await sqlRows(
    id,
    "INSERT INTO events (seq, type, at, data) VALUES ((SELECT max(seq) + 1 FROM events), 'subagent/descriptor', ?, ?)",
    Date.now(),
    JSON.stringify(data),
  );
  await evict(id);
}

export const descriptor = (extra: Record<string, unknown> = {}) => ({
  version: 2,
  mode: "one-shot",
  provider: "spawn",
  ...extra,
});

/** A settled one-shot row as listed. */
export function oneShotRow(id: string, createdAt: number, extra: Record<string, unknown> = {}): Entry {
  return {
    kind: "child",
    id,
    activity: "inactive",
    hasChildren: false,
    mode: "one-shot",
    status: "idle",
    provider: "spawn",
    createdAt,
    ...extra,
  };
}

export function diagnostic(id: string, reason: string, createdAt: number): Entry {
  return { kind: "diagnostic", id, reason, createdAt };
}

/** The token hash a child of `root`'s tree carries (for children created with `init`). */
export async function tokenHashOf(root: string): Promise<string | null> {
  const [row] = await sqlRows(root, "SELECT body FROM header");
  return (JSON.parse(row!.body as string) as { tokenHash: string | null }).tokenHash;
}

/**
 * Creates a real one-shot child session with the runtime's own `init` (header naming `parent`,
 * descriptor, prompt), bypassing the parent's checks (the depth cap): the way to build chains
 * deeper than MAX_DEPTH_CAP. The caller adds the parent's children row.
 */
export async function initChild(
  id: string,
  parent: string,
  lineage: string[],
  depth: number,
  tokenHash: string | null,
  label: string,
): Promise<void> {
  const spec: ChildInit = {
    v: 1,
    id,
    parentSession: parent,
    runId: crypto.randomUUID(),
    provider: "spawn",
    lineage,
    tokenHash,
    delegationDepth: depth,
    mode: "one-shot",
    label,
    descriptor: { version: 2, mode: "one-shot", provider: "spawn", label },
    options: { model: "scripted" },
    prompt: [{ type: "text", text: "leaf" }],
  };
  const answer = await stub(id).init(spec);
  expect(answer).toEqual({ ok: true, value: { id } });
}
