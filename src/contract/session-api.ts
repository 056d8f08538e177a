import type { ChildInit } from "./child-init";
import type { WireContent } from "./content";
import type { Envelope } from "./envelope";
import type { Outcome } from "./errors";
import type { ApprovalDecision, ApprovalScope, SessionEvent } from "./events";
import type { JsonValue } from "./json";
import type { AgentOptions, Caller } from "./session";
import type { ProviderInfo } from "./provider";
import type { ChildEntry } from "./listing";
import type { Jurisdiction, LocationHint } from "./placement";
import type { ContinuableInit, FollowupInput, InterruptAuthority } from "./continuable";
import type { MessageDelivery } from "./control";
import type { TraceContext, TraceCursor, TreeSpanPage } from "./trace";
import type { Spend } from "./events";

/** A method's answer now or later: an object answers some calls synchronously. */
type Answer<T> = T | Promise<T>;

/** A pending approval as `GET /v1/sessions/:id/approvals` lists it. */
export interface PendingApproval {
  approvalId: string;
  /** The session that asked. */
  sessionId: string;
  tool: string;
  args: JsonValue;
  toolCallId: string;
  requestedAt: number;
  /** The scopes an approve can take, where it is not `once` alone (an ACP agent's permission request). */
  scopes?: ApprovalScope[];
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

/**
 * What session objects ask of each other (never reachable over HTTP): the protocol between the
 * objects of a deployment, which two versions of the code speak during a deploy, so it is written
 * out here and the session object is held to it by the compiler. Another object reaches it
 * through a stub, as `Remote<SessionRpc>`. (The registry Worker's calls are the object's declared
 * methods: durable-objects/session/session-methods.ts.)
 */
export interface SessionRpc {
  /** A caller's decision, as `POST …/approvals/:approvalId` makes it (a session's MCP face calls its own object). */
  decideApproval(
    caller: Caller,
    approvalId: string,
    decision: { decision: ApprovalDecision; reason?: string; scope?: ApprovalScope },
  ): Answer<Outcome<{ approvalId: string; decision: ApprovalDecision }>>;
  init(spec: ChildInit): Answer<Outcome<{ id: string }>>;
  initContinuable(spec: ContinuableInit): Answer<Outcome<{ id: string; messageId: string }>>;
  deliver(envelope: Envelope): Answer<Outcome<{ applied: boolean }>>;
  followup(input: FollowupInput): Answer<Outcome<{ messageId: string; resumed: boolean }>>;
  interruptBy(authority: InterruptAuthority): Answer<Outcome<{ accepted: true }>>;
  /** A decision for an approval this session asked for, routed from an ancestor's path. */
  decideAsked(
    approvalId: string,
    decision: { decision: ApprovalDecision; reason?: string; scope?: ApprovalScope },
    by: string,
  ): Answer<Outcome<{ approvalId: string; decision: ApprovalDecision }>>;
  drainFrom(parentId: string): Answer<Outcome<{ drained: string[] }>>;
  /** At a tree's root: a slot for a session below one of its descendants (MAX_SESSIONS_PER_TREE). */
  reserveTreeSlot(childId: string): Answer<Outcome<void>>;
  /** Re-arms the child's owed work if its wake-up was lost; true when it had to (the parent's watchdog). */
  wake(): Answer<boolean>;
  /** Whether this continuable child ever ran epoch `runId` (repair of an unpublished start). */
  knowsEpoch(runId: string): Answer<boolean>;
  /** This session as a row of its parent's listing (null while it has no descriptor). */
  entry(expectedParent: string): Answer<ChildEntry | null>;
  /** This session's own children rows (for a descendants walk). */
  childEntries(): Answer<ChildEntry[]>;
  /**
   * Its parent deletes it (and its tree): marked at once, erased in the background; `gone` once
   * its object holds nothing (then asked no more).
   */
  deleteFrom(parentId: string): Answer<{ gone: boolean }>;
  /**
   * A page of the spans of this session and every local session below it: at most `budget`
   * bytes of OTLP JSON (at least one event's spans when `first`), from `cursor` on.
   */
  traceSpanPage(cursor: TraceCursor | undefined, budget: number, first: boolean): Answer<TreeSpanPage>;
  /**
   * A session of the tree whose budget this session owns has spent `draw.spend` so far, and
   * reserves for its next model call or settles the one it held (README "Prices and budgets"):
   * the tree's total and, for a reservation that does not fit, why; undefined where this session
   * owns no budget.
   */
  drawBudget(memberId: string, draw: BudgetDraw): Answer<BudgetAnswer | undefined>;
  /** The newest activity (epoch ms) of this session and every local session below it (RETENTION_DAYS). */
  treeActivity(): Answer<number>;
  /** A child of this session was deleted on its own: its runs end `aborted` and it leaves the listings. */
  childDeleted(childId: string): Answer<void>;
}

/** A session's report to its tree's budget (`drawBudget`). */
export interface BudgetDraw {
  /** What it has spent so far (a figure that only grows). */
  spend: Spend;
  /** A reservation for its next model call: its key, worst case, and how long it may be held. */
  reserve?: { key: string; worst: Spend; holdMs: number };
  /** The key of the reservation its finished call held. */
  settle?: string;
}

/** The budget owner's answer: the tree's total, and why a reservation was refused. */
export interface BudgetAnswer {
  used: Spend;
  refused?: string;
}

/** An object's surface as its callers see it through a stub: every answer arrives later. */
export type Remote<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K];
};

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
  /** How it joins the session's work (default `next-turn`). */
  delivery?: MessageDelivery;
  /** Epoch ms: the message enters the inbox no earlier than this. */
  notBefore?: number;
  /** The caller's span (its `traceparent`): the turn the message starts joins the caller's trace. */
  trace?: TraceContext;
}

export interface EventPage {
  events: SessionEvent[];
  next: number | null;
  /**
   * With `text: { leave: true }`: the events whose `content` was left out, by seq, and the length
   * of its text in characters: never more than its UTF-16 length, and 0 only when it has none.
   */
  textChars?: Record<number, number>;
}

/**
 * What of the messages' text (`user/message` and `assistant/message` `content`) a page of the log
 * carries, for a reader that folds the log and shows little of it: `leave` leaves every message's
 * content out (the page's bytes are counted without it; `EventPage.textChars` tells its length);
 * `only` reads just the events of those seqs (at most MAX_TEXT_READ_SEQS), in full.
 */
export type EventTextRead = { leave: true } | { only: number[] };

/** The most seqs one `EventTextRead` `only` names. */
export const MAX_TEXT_READ_SEQS = 512;

/** Whether `value` is an `EventTextRead` (an RPC argument: checked, not trusted). */
export function isEventTextRead(value: unknown): value is EventTextRead {
  if (typeof value !== "object" || value === null) return false;
  const keys = Object.keys(value);
  if (keys.length !== 1) return false;
  if ("leave" in value) return value.leave === true;
  if (!("only" in value) || !Array.isArray(value.only)) return false;
  const seqs: unknown[] = value.only;
  return (
    seqs.length <= MAX_TEXT_READ_SEQS && seqs.every((s) => Number.isSafeInteger(s) && (s as number) >= 0)
  );
}
