import type { ChildInit } from "./child-init";
import type { WireContent } from "./content";
import type { Envelope } from "./envelope";
import type { Outcome } from "./errors";
import type { SessionEvent } from "./events";
import type { RunView, StartRequest, StartedRun } from "./run";
import type { AgentOptions, Caller, SessionView } from "./session";
import type { ProviderInfo, ProviderRecord } from "../providers/catalog";

/** What the registry Worker may ask of a session's object (its RPC surface). */
export interface SessionApi {
  create(input: CreateSession): Promise<Outcome<SessionView>>;
  describe(caller: Caller): Promise<Outcome<SessionView>>;
  send(caller: Caller, input: SendInput): Promise<Outcome<{ messageId: string }>>;
  events(caller: Caller, query: { after: number; limit: number }): Promise<Outcome<EventPage>>;
  interrupt(caller: Caller): Promise<Outcome<{ accepted: true }>>;
  startRun(caller: Caller, request: StartRequest): Promise<Outcome<StartedRun>>;
  runStatus(caller: Caller, runId: string, waitMs: number): Promise<Outcome<RunView>>;
  disposeRun(caller: Caller, runId: string): Promise<Outcome<{ accepted: true }>>;
  fetch(request: Request): Promise<Response>;
}

/** What session objects ask of each other (never reachable over HTTP). */
export interface SessionRpc extends SessionApi {
  init(spec: ChildInit): Promise<Outcome<{ id: string }>>;
  deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>>;
}

/** The provider registry object's surface. */
export interface RegistryApi {
  list(): Promise<ProviderInfo[]>;
  resolve(name: string): Promise<ProviderRecord | undefined>;
  register(record: ProviderRecord): Promise<Outcome<ProviderInfo>>;
  remove(name: string): Promise<Outcome<{ removed: string }>>;
  events(after: number, limit: number): Promise<RegistryEvent[]>;
}

/** `subagent/provider-added` / `-removed` on the registry's own log. */
export interface RegistryEvent {
  seq: number;
  type: "subagent/provider-added" | "subagent/provider-removed";
  at: number;
  data: { name: string; provider?: ProviderInfo };
}

export interface CreateSession {
  id: string;
  tokenHash: string;
  options: AgentOptions;
  label?: string;
}

export interface SendInput {
  content: WireContent;
  idempotencyKey?: string;
}

export interface EventPage {
  events: SessionEvent[];
  next: number | null;
}
