import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { type FaultPointName, installFaults } from "../../src/core/faults";
import { type Api, allEvents, api } from "./helpers";

/**
 * Helpers of the contract section 10 scenarios on continuable children (26-58, 66-71): the
 * delegation routes, log readers, and readers of a session's own SQLite tables (what a parent
 * received into its inbox, its owned-children rows, its activation row).
 */

export type Ev = { seq: number; type: string; at: number; data: any };

export function stub(id: string): DurableObjectStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A scripted-model message (api.md). */
export function script(...steps: unknown[]): string {
  return JSON.stringify({ script: steps });
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** `POST /v1/sessions/:id/subagents` in continuable mode (label defaults to "helper"). */
export function startContinuable(parent: string, body: Record<string, unknown>): Promise<Api> {
  return api("POST", `/v1/sessions/${parent}/subagents`, {
    body: { provider: "spawn", mode: "continuable", label: "helper", ...body },
  });
}

/** Starts a continuable child and expects `202 {childId, messageId}`. */
export async function startChild(
  parent: string,
  body: Record<string, unknown>,
): Promise<{ childId: string; messageId: string }> {
  const res = await startContinuable(parent, body);
  if (res.status !== 202) throw new Error(`start failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Starts a one-shot child over HTTP and expects `201 {runId, id, local}`. */
export async function startOneShot(
  parent: string,
  body: Record<string, unknown>,
): Promise<{ runId: string; id: string }> {
  const res = await api("POST", `/v1/sessions/${parent}/subagents`, {
    body: { provider: "spawn", mode: "one-shot", ...body },
  });
  if (res.status !== 201) throw new Error(`one-shot start failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export function followup(parent: string, childId: string, content: unknown, token?: string): Promise<Api> {
  return api("POST", `/v1/sessions/${parent}/subagents/${childId}/messages`, {
    body: { content },
    ...(token === undefined ? {} : { token }),
  });
}

export async function followupOk(parent: string, childId: string, content: unknown): Promise<string> {
  const res = await followup(parent, childId, content);
  if (res.status !== 202) throw new Error(`follow-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messageId;
}

export function interruptChild(parent: string, childId: string): Promise<Api> {
  return api("POST", `/v1/sessions/${parent}/subagents/${childId}/interrupt`);
}

export function drain(parent: string, childIds?: string[]): Promise<Api> {
  return api("POST", `/v1/sessions/${parent}/subagents/drain`, {
    body: childIds === undefined ? {} : { childIds },
  });
}

export async function send(id: string, content: unknown): Promise<string> {
  const res = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  if (res.status !== 202) throw new Error(`send failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messageId;
}

export async function view(id: string): Promise<any> {
  const res = await api("GET", `/v1/sessions/${id}`);
  if (res.status !== 200) throw new Error(`view failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function events(id: string): Promise<Ev[]> {
  return (await allEvents(id)) as Ev[];
}

/** Polls a session's log until `predicate` holds. */
export async function until(
  id: string,
  predicate: (log: Ev[]) => boolean,
  timeoutMs = 15_000,
): Promise<Ev[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = await events(id);
    if (predicate(log)) return log;
    if (Date.now() > deadline)
      throw new Error(`timed out on ${id}; log: ${JSON.stringify(log.map((e) => e.type))}`);
    await sleep(20);
  }
}

export function ofType(log: readonly Ev[], type: string): Ev[] {
  return log.filter((e) => e.type === type);
}

export function count(log: readonly Ev[], type: string): number {
  return ofType(log, type).length;
}

export function textOf(content: unknown): string {
  return Array.isArray(content) ? content.map((b: { text?: string }) => b.text ?? "").join("") : "";
}

export function userTexts(log: readonly Ev[]): string[] {
  return ofType(log, "user/message").map((e) => textOf(e.data.content));
}

export function assistantTexts(log: readonly Ev[]): string[] {
  return ofType(log, "assistant/message").map((e) => textOf(e.data.content));
}

export function turnReasons(log: readonly Ev[]): string[] {
  return ofType(log, "turn/end").map((e) => e.data.reason);
}

/** `agent/inbox/inserted` events whose source is of `kind`. */
export function insertedOf(log: readonly Ev[], kind: string): Ev[] {
  return ofType(log, "agent/inbox/inserted").filter((e) => e.data.source.kind === kind);
}

/** `user/message` events whose source is of `kind`. */
export function messagesOf(log: readonly Ev[], kind: string): Ev[] {
  return ofType(log, "user/message").filter((e) => e.data.source.kind === kind);
}

/** Tool results, optionally of one tool, as `{name, text, isError, toolCallId}`. */
export function toolResults(
  log: readonly Ev[],
  name?: string,
): { name: string; text: string; isError: boolean; toolCallId: string }[] {
  return ofType(log, "tool/result")
    .filter((e) => name === undefined || e.data.name === name)
    .map((e) => ({
      name: e.data.name,
      text: textOf(e.data.content),
      isError: e.data.isError,
      toolCallId: e.data.toolCallId,
    }));
}

export function endsFor(log: readonly Ev[], childId: string): Ev[] {
  return ofType(log, "subagent/end").filter((e) => e.data.id === childId);
}

export function startsFor(log: readonly Ev[], childId: string): Ev[] {
  return ofType(log, "subagent/start").filter((e) => e.data.id === childId);
}

/** The id of the continuable child a session started with its `subagent` tool (the n-th start). */
export function startedChildId(log: readonly Ev[], n = 0): string {
  const start = ofType(log, "subagent/start")[n];
  if (!start) throw new Error(`no subagent/start #${n} in ${JSON.stringify(log.map((e) => e.type))}`);
  return start.data.id;
}

/** Waits until the parent recorded `n` subagent/end events for `childId`. */
export function settledTimes(parent: string, childId: string, n = 1, timeoutMs = 15_000): Promise<Ev[]> {
  return until(parent, (log) => endsFor(log, childId).length >= n, timeoutMs);
}

/** Waits until nothing was appended to the session's log for `quietMs`, then returns the log. */
export async function quiet(id: string, quietMs = 300, timeoutMs = 15_000): Promise<Ev[]> {
  const deadline = Date.now() + timeoutMs;
  let last = await events(id);
  let stableSince = Date.now();
  for (;;) {
    await sleep(50);
    const now = await events(id);
    if (now.length !== last.length) {
      last = now;
      stableSince = Date.now();
    } else if (Date.now() - stableSince >= quietMs) return now;
    if (Date.now() > deadline) throw new Error(`${id} never went quiet`);
  }
}

export type Row = Record<string, SqlStorageValue>;

export function sqlRows<T extends Row = Row>(
  id: string,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.sql.exec<T>(query, ...bindings).toArray(),
  );
}

/** What a parent received into its inbox (content included), in acceptance order. */
export async function inboxOf(
  id: string,
): Promise<{ messageId: string; lane: string; waking: boolean; state: string; source: any; text: string }[]> {
  const rows = await sqlRows<{
    message_id: string;
    lane: string;
    waking: number;
    state: string;
    source: string;
    content: string;
  }>(id, "SELECT message_id, lane, waking, state, source, content FROM inbox ORDER BY position");
  return rows.map((r) => ({
    messageId: r.message_id,
    lane: r.lane,
    waking: r.waking === 1,
    state: r.state,
    source: JSON.parse(r.source),
    text: textOf(JSON.parse(r.content)),
  }));
}

/** Settlement notices a parent received, keyed by the sender. */
export async function noticesFrom(parent: string, childId: string) {
  return (await inboxOf(parent)).filter(
    (m) => m.source.kind === "subagent-settled" && m.source.senderSessionId === childId,
  );
}

export async function activationOf(id: string): Promise<Row[]> {
  return sqlRows(id, "SELECT epoch, run_id, provider FROM activation");
}

export async function childRows(id: string): Promise<Row[]> {
  return sqlRows(id, "SELECT child_id, mode, state, provider FROM children ORDER BY created_at, child_id");
}

export function who(childId: string): string {
  return `Background subagent ${childId}`;
}

export function finished(childId: string): string {
  return `${who(childId)} finished and will do no further work unless you send it more.`;
}

/** Expects `res` to be the error envelope with `status` and `code`. */
export function expectError(res: Api, status: number, code: string, message?: RegExp): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  if (message) expect(res.body.error.message).toMatch(message);
}

/**
 * Holds a session at the first call of a fault point until released (later calls pass), and
 * counts every point it was asked about.
 */
export function holdAt(
  scope: string,
  point: FaultPointName,
): { reached: Promise<void>; release(): void; count(p: FaultPointName): number; remove(): void } {
  const hits: FaultPointName[] = [];
  let reached!: () => void;
  const reachedP = new Promise<void>((r) => {
    reached = r;
  });
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held = false;
  const remove = installFaults(scope, (p) => {
    hits.push(p);
    if (p !== point || held) return;
    held = true;
    reached();
    return released;
  });
  return {
    reached: reachedP,
    release() {
      release();
    },
    count: (p) => hits.filter((h) => h === p).length,
    remove() {
      release();
      remove();
    },
  };
}
