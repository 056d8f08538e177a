import type { WireContent } from "./content";
import type { Outcome } from "./errors";
import type { SessionEvent } from "./events";
import type { AgentOptions, Caller, SessionView } from "./session";

/** What the registry Worker may ask of a session's object (its RPC surface). */
export interface SessionApi {
  create(input: CreateSession): Promise<Outcome<SessionView>>;
  describe(caller: Caller): Promise<Outcome<SessionView>>;
  send(caller: Caller, input: SendInput): Promise<Outcome<{ messageId: string }>>;
  events(caller: Caller, query: { after: number; limit: number }): Promise<Outcome<EventPage>>;
  interrupt(caller: Caller): Promise<Outcome<{ accepted: true }>>;
  fetch(request: Request): Promise<Response>;
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
