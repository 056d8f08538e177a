import type { ChildInit } from "./child-init";
import type { WireContent } from "./content";
import type { Envelope } from "./envelope";
import type { Outcome } from "./errors";
import type { SessionEvent } from "./events";
import type { RunView, StartRequest, StartedRun } from "./run";
import type { AgentOptions, Caller, SessionView } from "./session";
import type { ProviderInfo, ProviderScope } from "./provider";
import type { ChildEntry, DescendantListing } from "./listing";
import type { Jurisdiction, LocationHint } from "./placement";
import type { ContinuableInit, ContinuableStart, FollowupInput, InterruptAuthority } from "./continuable";

/** What the registry Worker may ask of a session's object (its RPC surface). */
export interface SessionApi {
  create(input: CreateSession): Promise<Outcome<{ view: SessionView; replayed: boolean }>>;
  describe(caller: Caller): Promise<Outcome<SessionView>>;
  /** The providers this session may use: its tenant and its `providers` option. */
  providerScope(caller: Caller): Promise<Outcome<ProviderScope>>;
  send(caller: Caller, input: SendInput): Promise<Outcome<{ messageId: string }>>;
  /** A page after `query.after`; with `waitMs` (at most 60 s) an empty page waits for the next event. */
  events(
    caller: Caller,
    query: { after: number; limit: number },
    waitMs?: number,
  ): Promise<Outcome<EventPage>>;
  interrupt(caller: Caller): Promise<Outcome<{ accepted: true }>>;
  startRun(caller: Caller, request: StartRequest): Promise<Outcome<StartedRun>>;
  runStatus(caller: Caller, runId: string, waitMs: number): Promise<Outcome<RunView>>;
  disposeRun(caller: Caller, runId: string): Promise<Outcome<{ accepted: true }>>;
  startContinuable(
    caller: Caller,
    spec: ContinuableStart,
  ): Promise<Outcome<{ childId: string; messageId: string }>>;
  followupChild(
    caller: Caller,
    childId: string,
    content: WireContent,
  ): Promise<Outcome<{ messageId: string }>>;
  interruptChild(caller: Caller, childId: string): Promise<Outcome<{ accepted: true }>>;
  drainChildren(caller: Caller, childIds?: string[]): Promise<Outcome<{ drained: string[] }>>;
  listChildren(caller: Caller): Promise<Outcome<{ entries: ChildEntry[] }>>;
  listDescendants(caller: Caller): Promise<Outcome<DescendantListing>>;
  outbox(caller: Caller): Promise<Outcome<{ entries: OutboxEntry[] }>>;
  /** A signed callback with a remote run's result; the object checks the signature itself. */
  remoteCallback(
    runId: string,
    input: { timestamp: string | null; signature: string | null; body: string },
  ): Promise<Outcome<{ applied: true }>>;
  fetch(request: Request): Promise<Response>;
}

/** One message this session sent or is sending to another session (dead letters included). */
export interface OutboxEntry {
  id: string;
  target: string;
  kind: string;
  attempts: number;
  state: "pending" | "delivered" | "dead";
  lastError?: string;
}

/** What session objects ask of each other (never reachable over HTTP). */
export interface SessionRpc extends SessionApi {
  init(spec: ChildInit): Promise<Outcome<{ id: string }>>;
  initContinuable(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>>;
  deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>>;
  followup(input: FollowupInput): Promise<Outcome<{ messageId: string; resumed: boolean }>>;
  interruptBy(authority: InterruptAuthority): Promise<Outcome<{ accepted: true }>>;
  drainFrom(parentId: string): Promise<Outcome<{ drained: string[] }>>;
  /** Whether this continuable child ever ran epoch `runId` (repair of an unpublished start). */
  /** Re-arms the child's owed work if its wake-up was lost; true when it had to (the parent's watchdog). */
  wake(): Promise<boolean>;
  knowsEpoch(runId: string): Promise<boolean>;
  /** This session as a row of its parent's listing (null while it has no descriptor). */
  entry(expectedParent: string): Promise<ChildEntry | null>;
  /** This session's own children rows (for a descendants walk). */
  childEntries(): Promise<ChildEntry[]>;
}

/** A top-level session in the deployment's directory (`GET /v1/sessions`). */
export interface DirectoryEntry {
  id: string;
  createdAt: number;
  /** Not kept for a session in a jurisdiction (the directory lives outside it). */
  label?: string;
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
}

/** `subagent/provider-added` / `-removed` on the registry's own log. */
export interface RegistryEvent {
  seq: number;
  type: "subagent/provider-added" | "subagent/provider-removed";
  at: number;
  /** `provider`: as registered (with its url and tenants); `tenants` on a removal. */
  data: { name: string; provider?: ProviderInfo; tenants?: string[] };
}

export interface CreateSession {
  id: string;
  tokenHash: string;
  options: AgentOptions;
  label?: string;
  tenant?: string;
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
  callback?: { url: string; secret: string };
  delegationDepth?: number;
  /** Present when created with an idempotency key (see `SessionHeader.createKey`). */
  createKey?: string;
}

export interface SendInput {
  content: WireContent;
  idempotencyKey?: string;
}

export interface EventPage {
  events: SessionEvent[];
  next: number | null;
}
