import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  ERROR_STATUS,
  type SessionEvent,
  type SocketEvent,
  SubagentError,
  SubagentsClient,
  type WebSocketFactory,
} from "../../../src/client";
import type * as Client from "../../../src/client/types";
import type { ContinuableStartSchema } from "../../../src/contract/continuable";
import { ERROR_STATUS as CONTRACT_ERROR_STATUS } from "../../../src/contract/errors";
import type { SessionEvent as ContractEvent } from "../../../src/contract/events";
import type { RunView as ContractRunView, StartRequestSchema } from "../../../src/contract/run";
import type { DirectoryEntry, OutboxEntry, RegistryEvent } from "../../../src/contract/session-api";
import type { SessionView as ContractSessionView } from "../../../src/contract/session";
import type { CreateSessionBody } from "../../../src/contract/wire";
import type { OtlpTraces as ContractOtlpTraces } from "../../../src/contract/trace";
import type { OtlpTrace } from "../../../src/client/trace";
import type { DescendantEntry as ContractDescendant } from "../../../src/contract/listing";
import type { ProviderInfo as ContractProvider } from "../../../src/providers/catalog";
import { ADMIN, workerFetch } from "../../support/api";
import { eventually } from "../../support/logs";
import { script } from "../../support/scripts";

// ---- compile-time: the SDK's wire types stay in step with the runtime's contract ----------------
type Assert<T extends true> = T;
type Extends<A, B> = [A] extends [B] ? true : false;
type WireTypesMatch = [
  Assert<Extends<ContractEvent, SessionEvent>>,
  Assert<Extends<ContractSessionView, Client.SessionView>>,
  Assert<Extends<ContractRunView, Client.RunView>>,
  Assert<Extends<ContractDescendant, Client.DescendantEntry>>,
  Assert<Extends<ContractProvider, Client.ProviderInfo>>,
  Assert<Extends<DirectoryEntry, Client.DirectoryEntry>>,
  Assert<Extends<RegistryEvent, Client.ProviderEvent>>,
  Assert<Extends<OutboxEntry, Client.OutboxEntry>>,
  Assert<Extends<Client.CreateSessionRequest, z.input<typeof CreateSessionBody>>>,
  Assert<Extends<Client.StartOneShotRequest, z.input<typeof StartRequestSchema>>>,
  Assert<Extends<Client.StartContinuableRequest, z.input<typeof ContinuableStartSchema>>>,
  Assert<Extends<ContractOtlpTraces, OtlpTrace>>,
];

/** The Worker's fetch with the signature the SDK expects. */
const sdkFetch = (input: string, init: RequestInit) => workerFetch(new Request(input, init));

function client(token: string | null = ADMIN, socket?: WebSocketFactory): SubagentsClient {
  return new SubagentsClient({
    baseUrl: "http://example.com",
    token: token ?? undefined,
    fetch: sdkFetch,
    webSocket: socket ?? socketAdapter(sdkFetch).factory,
  });
}

type Listener = (event: SocketEvent) => void;

/**
 * A WebSocket factory over the Worker's fetch (an upgrade request, then `accept()`), so the SDK's
 * stream runs in-process. `dropAll()` cuts every open connection as a network failure would;
 * `skip` hides chosen seqs, as a lossy connection might; `silence()` makes the open connections
 * carry nothing either way without closing (a proxy that dropped them). Keepalive frames sent and
 * `pong`s received are counted.
 */
function socketAdapter(fetcher: typeof sdkFetch, options: { skip?: (seq: number) => boolean } = {}) {
  const live = new Set<{ drop(): void }>();
  const silenced = new Set<WebSocket>();
  const urls: string[] = [];
  let opened = 0;
  let pings = 0;
  let pongs = 0;
  const sockets: WebSocket[] = [];
  const factory: WebSocketFactory = (url, protocols) => {
    urls.push(url);
    const listeners = new Map<string, Listener[]>();
    const emit = (type: string, event: SocketEvent) => {
      for (const l of listeners.get(type) ?? []) l(event);
    };
    let socket: WebSocket | undefined;
    let gone = false;
    const end = (code: number) => {
      if (gone) return;
      gone = true;
      live.delete(handle);
      emit("close", { code, reason: "" });
    };
    const handle = {
      drop() {
        try {
          socket?.close(1011, "dropped");
        } catch {}
        end(1006);
      },
    };
    live.add(handle);
    void fetcher(url.replace(/^ws/, "http"), {
      headers: { upgrade: "websocket", "sec-websocket-protocol": protocols.join(", ") },
    }).then(
      (response) => {
        socket = response.webSocket ?? undefined;
        if (!socket || gone) {
          emit("error", {});
          return end(1006);
        }
        socket.addEventListener("message", (event) => {
          if (gone || silenced.has(socket!)) return;
          if (event.data === "pong") {
            pongs += 1;
            return emit("message", { data: event.data });
          }
          const seq = JSON.parse(String(event.data)).seq as number;
          if (!options.skip?.(seq)) emit("message", { data: event.data });
        });
        socket.addEventListener("close", (event) => end(event.code));
        socket.accept();
        sockets.push(socket);
        opened += 1;
        emit("open", {});
      },
      () => {
        emit("error", {});
        end(1006);
      },
    );
    return {
      addEventListener(type, listener) {
        listeners.set(type, [...(listeners.get(type) ?? []), listener]);
      },
      send(data) {
        if (!socket || gone || silenced.has(socket)) return;
        pings += 1;
        socket.send(data);
      },
      close(code, reason) {
        try {
          socket?.close(code ?? 1000, reason ?? "");
        } catch {}
        end(code ?? 1000);
      },
    };
  };
  return {
    factory,
    dropAll: () => {
      for (const h of [...live]) h.drop();
    },
    urls: () => urls,
    opened: () => opened,
    /** Every connection opened so far goes silent (no frame either way, no close). */
    silenceAll: () => {
      for (const s of sockets) silenced.add(s);
    },
    keepalive: () => ({ pings, pongs }),
  };
}

async function take(stream: AsyncIterator<SessionEvent>, n: number): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  while (out.length < n) {
    const next = await stream.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

async function failure(promise: Promise<unknown>): Promise<SubagentError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SubagentError) return error;
    throw error;
  }
  throw new Error("expected a SubagentError");
}

describe("the client SDK against the Worker", () => {
  it("knows every error code of src/contract/errors.ts with the same status", () => {
    const typesMatch: WireTypesMatch["length"] = 12; // the tuple above compiles: the wire types match
    expect(typesMatch).toBe(12);
    for (const [code, status] of Object.entries(CONTRACT_ERROR_STATUS))
      expect([code, (ERROR_STATUS as Record<string, number>)[code]]).toEqual([code, status]);
  });

  it("health, providers (list, put, events, delete) and their typed errors", async () => {
    const admin = client();
    expect(await admin.health()).toMatchObject({ ok: true });
    const names = (await admin.listProviders()).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(["spawn", "fork"]));

    const name = `sdk-${crypto.randomUUID().slice(0, 8)}`;
    const added = await admin.putProvider(name, { kind: "remote", url: "https://example.org" });
    expect(added).toMatchObject({ name, kind: "remote", local: false });
    const duplicate = await failure(admin.putProvider(name, { kind: "remote", url: "https://example.org" }));
    expect([duplicate.status, duplicate.code]).toEqual([409, "DUPLICATE_PROVIDER"]);

    const events = await admin.providerEvents({ after: -1, limit: 500 });
    expect(events.events.some((e) => e.type === "subagent/provider-added" && e.data.name === name)).toBe(
      true,
    );
    await admin.deleteProvider(name);
    const gone = await failure(admin.deleteProvider(name));
    expect([gone.status, gone.code]).toEqual([404, "NO_PROVIDER"]);
  });

  it("sessions: create, list with cursor paging, get, send, events paging, interrupt", async () => {
    const admin = client();
    const a = await admin.createSession({ label: "sdk a" });
    const b = await admin.createSession({ label: "sdk b" });
    expect(a.token.startsWith(`${a.id}.`)).toBe(true);

    const first = await admin.listSessions({ limit: 1 });
    expect(first.sessions).toHaveLength(1);
    expect(first.next).not.toBeNull();
    const seen: string[] = [];
    for await (const entry of admin.allSessions({ pageSize: 1 })) {
      seen.push(entry.id);
      if (seen.includes(a.id)) break;
    }
    expect(seen.indexOf(b.id)).toBeLessThan(seen.indexOf(a.id)); // newest first

    const own = client(a.token);
    expect(own.tokenSession).toBe(a.id);
    expect(admin.tokenSession).toBeUndefined();
    expect(await own.getSession(a.id)).toMatchObject({ id: a.id, label: "sdk a", parentSession: null });
    // a caller's trace context rides along: the turn the message starts joins that trace
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const { messageId } = await own.sendMessage(a.id, "hello sdk", { idempotencyKey: "k1", traceparent });
    expect(typeof messageId).toBe("string");
    const log = await eventually(
      async () => {
        const all: SessionEvent[] = [];
        for await (const e of own.allEvents(a.id)) all.push(e);
        return all;
      },
      (es) => es.some((e) => e.type === "turn/end"),
    );
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i));
    const answer = log.find((e) => e.type === "assistant/message") as SessionEvent<"assistant/message">;
    expect(answer.data.content[0]?.text).toBe("echo: hello sdk");
    const said = log.find((e) => e.type === "user/message") as SessionEvent<"user/message">;
    expect(said.data.source).toEqual({
      kind: "user",
      trace: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7" },
    });
    const page = await own.events(a.id, { after: 0, limit: 2 });
    expect(page.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(page.next).toBe(2);
    expect(await own.interrupt(a.id)).toEqual({ accepted: true });
  });

  it("approvals: list the pending ones, decide with the token's own session or a named one, typed conflicts", async () => {
    const admin = client();
    const session = await admin.createSession({ requireApproval: ["echo"] });
    const own = client(session.token);
    await own.sendMessage(
      session.id,
      script({ call: [{ tool: "echo", args: { text: "sdk" } }] }, { say: "ok" }),
    );
    const [pending] = await eventually(
      () => own.approvals(),
      (list) => list.length === 1,
    );
    expect(pending).toMatchObject({ sessionId: session.id, tool: "echo", args: { text: "sdk" } });
    expect(await admin.approvals(session.id)).toEqual([pending]);
    expect(await own.decide(pending!.approvalId, "deny", "no")).toEqual({
      approvalId: pending!.approvalId,
      decision: "deny",
    });
    const conflict = await admin
      .decide(pending!.approvalId, "approve", undefined, { sessionId: session.id })
      .catch((e: unknown) => e);
    expect(conflict).toMatchObject({ status: 409, code: "ALREADY_DECIDED" });
    await expect(admin.decide(pending!.approvalId, "deny")).rejects.toMatchObject({
      code: "INVALID_REQUEST",
    });
  });

  it("steering, scheduled messages, schedules, deadlines and deleting a tree", async () => {
    const admin = client();
    const session = await admin.createSession({});
    await admin.sendMessage(session.id, script({ think: 1_000 }, { say: "busy" }));
    await eventually(
      () => admin.events(session.id),
      (page) => page.events.some((e) => e.type === "user/message"),
    );
    await admin.sendMessage(session.id, "steer", { delivery: "next-step" });
    const steered = await eventually(
      () => admin.events(session.id),
      (page) => page.events.some((e) => e.type === "turn/end"),
    );
    expect(steered.events.filter((e) => e.type === "turn/start")).toHaveLength(1);
    const notBefore = Date.now() + 3_600_000;
    const later = await admin.sendMessage(session.id, "later", { notBefore });
    expect(later.messageId).toMatch(/^msg_/);
    const made = await admin.schedule(session.id, {
      cron: "30 7 * * 1",
      content: "weekly",
      timezone: "Asia/Tokyo",
    });
    const held = {
      scheduleId: expect.stringMatching(/^sch_/),
      kind: "message",
      next: notBefore,
      content: "later",
      messageId: later.messageId,
      delivery: "next-turn",
    };
    expect(await admin.schedules(session.id)).toEqual([
      held,
      {
        scheduleId: made.scheduleId,
        kind: "cron",
        cron: "30 7 * * 1",
        timezone: "Asia/Tokyo",
        next: made.next,
        content: "weekly",
      },
    ]);
    await admin.unschedule(session.id, made.scheduleId);
    expect(await admin.schedules(session.id)).toEqual([held]);
    await expect(admin.schedule(session.id, { cron: "* *", content: "x" })).rejects.toMatchObject({
      status: 400,
      code: "INVALID_REQUEST",
    });
    const run = await admin.startOneShot(session.id, {
      provider: "spawn",
      prompt: script({ think: 10_000 }, { say: "never" }),
      deadlineSeconds: 1,
    });
    const settled = await eventually(
      () => admin.getRun(session.id, run.runId, { wait: 2_000 }),
      (view) => view.state === "settled",
    );
    expect(settled.result).toMatchObject({
      stopReason: "aborted",
      diagnostic: expect.stringMatching(/^deadline passed/),
    });
    const own = client(session.token);
    await expect(own.deleteSession(session.id)).rejects.toMatchObject({ status: 403, code: "UNAUTHORIZED" });
    expect(await admin.deleteSession(session.id)).toEqual({ accepted: true });
    await expect(admin.getSession(session.id)).rejects.toMatchObject({ status: 404, code: "NOT_FOUND" });
  });

  it("turns error envelopes into SubagentErrors with status, code and issues", async () => {
    const admin = client();
    const s = await admin.createSession();
    const anonymous = await failure(client(null).createSession());
    expect([anonymous.status, anonymous.code]).toEqual([401, "UNAUTHENTICATED"]);
    const notAdmin = await failure(client(s.token).listSessions());
    expect([notAdmin.status, notAdmin.code]).toEqual([403, "UNAUTHORIZED"]);
    const other = await admin.createSession();
    const elsewhere = await failure(client(s.token).getSession(other.id));
    expect([elsewhere.status, elsewhere.code]).toEqual([404, "NOT_FOUND"]);
    const invalid = await failure(
      admin.startContinuable(s.id, { provider: "spawn", prompt: "x" } as Client.StartContinuableRequest),
    );
    expect([invalid.status, invalid.code]).toEqual([400, "INVALID_REQUEST"]);
    expect(invalid.issues?.[0]?.path).toEqual(["label"]);
    expect(invalid.describe()).toContain("INVALID_REQUEST (400)");
    const noProvider = await failure(admin.startOneShot(s.id, { provider: "nope", prompt: "x" }));
    expect([noProvider.status, noProvider.code]).toEqual([404, "NO_PROVIDER"]);
  });

  it("one-shot runs: start, long-poll to settlement, dispose", async () => {
    const admin = client();
    const parent = await admin.createSession();
    const run = await admin.startOneShot(parent.id, { provider: "spawn", prompt: script({ say: "42" }) });
    expect(run.local).toBe(true);
    const settled = await admin.waitForRun(parent.id, run.runId, { timeoutMs: 15_000 });
    expect(settled).toMatchObject({ runId: run.runId, id: run.id, state: "settled" });
    expect(settled.result?.output[0]?.text).toBe("42");
    expect((await admin.getRun(parent.id, run.runId)).state).toBe("settled");
    await admin.disposeRun(parent.id, run.runId);
    await admin.disposeRun(parent.id, run.runId); // idempotent
  });

  it("continuable children: start, listings, interrupt, follow-up, drain", async () => {
    const admin = client();
    const parent = await admin.createSession();
    const own = client(parent.token);
    const slow = script({ think: 10_000 }, { say: "slow" });
    const { childId } = await own.startContinuable(parent.id, {
      provider: "spawn",
      prompt: slow,
      label: "kid",
    });
    const running = await eventually(
      () => own.descendants(parent.id),
      (es) => es[0]?.kind === "child" && es[0].status === "running",
    );
    expect(running[0]).toMatchObject({ id: childId, parentId: parent.id, depth: 1, mode: "continuable" });
    expect((await own.children(parent.id)).map((e) => e.id)).toEqual([childId]);

    expect(await own.interruptChild(parent.id, childId)).toEqual({ accepted: true });
    await eventually(
      () => own.children(parent.id),
      (es) => es[0]?.kind === "child" && es[0].activity === "inactive",
    );
    await own.followUp(parent.id, childId, "again");
    const childLog = await eventually(
      async () => (await own.events(childId, { limit: 500 })).events,
      (es) => es.some((e) => e.type === "assistant/message"),
    );
    expect(childLog.some((e) => e.type === "user/message")).toBe(true);
    expect(await own.drain(parent.id)).toEqual(expect.any(Array));
    const sent = await own.outbox(childId);
    expect(sent.every((e) => e.target === parent.id && typeof e.state === "string")).toBe(true);
  });

  it("streams a session's events, reconnecting without gap or duplicate after drops", async () => {
    const admin = client();
    const s = await admin.createSession();
    const adapter = socketAdapter(sdkFetch);
    const states: string[] = [];
    const stream = client(s.token, adapter.factory).stream(s.id, {
      minDelayMs: 10,
      onState: (state) => states.push(state),
    });
    await client(s.token).sendMessage(s.id, "one");
    const firstTurn = await take(stream, 6); // inserted, start, claimed, user, assistant, end
    expect(firstTurn.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);

    adapter.dropAll(); // the connection goes away between turns
    await client(s.token).sendMessage(s.id, "two");
    await client(s.token).sendMessage(s.id, "three");
    const rest = await take(stream, 12);
    const all = [...firstTurn, ...rest];
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    expect(adapter.opened()).toBeGreaterThanOrEqual(2);
    expect(adapter.urls().at(-1)).toMatch(/\?after=5$/);
    expect(states).toContain("reconnecting");
    stream.close();
    expect((await stream.next()).done).toBe(true);
  });

  it("keeps an idle stream open with ping/pong, and reconnects one that went silent without closing", async () => {
    const admin = client();
    const s = await admin.createSession();
    const adapter = socketAdapter(sdkFetch);
    const stream = client(s.token, adapter.factory).stream(s.id, { minDelayMs: 10, keepaliveMs: 40 });
    await admin.sendMessage(s.id, "one");
    expect((await take(stream, 6)).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    // idle: the pings are answered, and the connection stays the one it was
    await eventually(
      async () => adapter.keepalive(),
      (k) => k.pongs >= 3,
    );
    expect(adapter.opened()).toBe(1);
    // a proxy drops the connection silently: the stream notices and reconnects from seq 5
    adapter.silenceAll();
    await eventually(
      async () => adapter.opened(),
      (n) => n === 2,
    );
    expect(adapter.urls().at(-1)).toMatch(/\?after=5$/);
    await admin.sendMessage(s.id, "two");
    expect((await take(stream, 6)).map((e) => e.seq)).toEqual([6, 7, 8, 9, 10, 11]);
    stream.close();
  });

  it("fills a gap in what the socket delivers from the paged log, and resumes from `after`", async () => {
    const admin = client();
    const s = await admin.createSession();
    await admin.sendMessage(s.id, "one");
    await eventually(
      async () => (await admin.events(s.id)).events,
      (es) => es.some((e) => e.type === "turn/end"),
    );
    const lossy = socketAdapter(sdkFetch, { skip: (seq) => seq === 2 || seq === 3 });
    const stream = client(ADMIN, lossy.factory).stream(s.id, { after: 0 });
    const events = await take(stream, 5);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    stream.close();
  });

  it("ends the iteration with the server's refusal (a token for another session)", async () => {
    const admin = client();
    const s = await admin.createSession();
    const other = await admin.createSession();
    const stream = client(other.token).stream(s.id, { minDelayMs: 10 });
    const error = await failure(stream.next());
    expect([error.status, error.code]).toEqual([404, "NOT_FOUND"]);
    expect((await stream.next()).done).toBe(true);
  });
});
