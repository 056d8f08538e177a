import { RpcTarget } from "cloudflare:workers";
import { type Outcome, SubagentError } from "../contract/errors";
import { type StartRequest, StartRequestSchema, type SubagentResult } from "../contract/run";
import type { SessionView } from "../contract/session";
import type { EventPage, PendingApproval } from "../contract/session-api";
import { ContinuableStartSchema, DrainBody, FollowupBody } from "../contract/continuable";
import { CreateSessionBody, DecideApprovalBody, SendMessageBody } from "../contract/wire";
import { CreateScheduleBody, type Schedule } from "../contract/control";
import type { ChildEntry, DescendantListing } from "../contract/listing";
import { compact } from "../core/compact";
import { validate } from "../http/body";
import { createTopLevelSession } from "../http/session-create";
import type { Deployment } from "../platform/deployment";
import { registryStub, sessionStub } from "../platform/stubs";
import type { ProviderInfo } from "../providers/catalog";
import * as z from "zod";
import { lazySchema } from "../contract/lazy";

/**
 * The service-binding surface: the same operations as the HTTP API for other Workers, acting with
 * the deployment's authority (a service binding is configured by whoever owns both Workers).
 * Arguments are validated here as at the HTTP edge; failures throw `SubagentError`s whose message
 * starts with the stable code (RPC keeps only an error's name and message).
 */

const ADMIN = { kind: "admin" } as const;
const SessionIdArg = lazySchema(() => z.uuid());
const WAIT_SLICE_MS = 25_000;

function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw new SubagentError(outcome.code, `${outcome.code}: ${outcome.message}`, outcome.issues);
}

function arg<T>(value: unknown, schema: z.ZodType<T>): T {
  return unwrap(validate(value, schema));
}

/** A one-shot run as the caller holds it: `result()` waits for the child's one result. */
export class RunHandle extends RpcTarget {
  readonly #env: Env;
  readonly #parent: string;
  readonly #run: { id: string; runId: string; local: boolean };

  constructor(env: Env, parent: string, run: { id: string; runId: string; local: boolean }) {
    super();
    this.#env = env;
    this.#parent = parent;
    this.#run = run;
  }

  // Getters, not fields: only prototype members cross the RPC boundary.
  /** The child's session id (for local runs). */
  get id(): string {
    return this.#run.id;
  }

  get runId(): string {
    return this.#run.runId;
  }

  get local(): boolean {
    return this.#run.local;
  }

  /** Resolves with the result once the run settled (a non-completed stop reason is still a result). */
  async result(): Promise<SubagentResult> {
    for (;;) {
      const run = unwrap(
        await sessionStub(this.#env, this.#parent).runStatus(ADMIN, this.runId, WAIT_SLICE_MS),
      );
      if (run.state === "settled" && run.result) return run.result;
    }
  }

  /** Cancels the run (idempotent) and waits until it settled. */
  async dispose(): Promise<void> {
    unwrap(await sessionStub(this.#env, this.#parent).disposeRun(ADMIN, this.runId));
    await this.result();
  }
}

/**
 * The implementation behind the entrypoint class `createSubagents` exports (src/worker/), which
 * builds it on an instance's first call with the deployment's tools and models.
 */
export class SubagentsEntrypoint {
  protected readonly env: Env;
  readonly #deployment: Deployment;

  constructor(env: Env, deployment: Deployment) {
    this.env = env;
    this.#deployment = deployment;
  }

  async providers(): Promise<ProviderInfo[]> {
    return registryStub(this.env).list();
  }

  /** A new top-level session and its token; an idempotent replay (same key) answers no token. */
  async createSession(options: unknown = {}): Promise<SessionView & { token?: string }> {
    return unwrap(await createTopLevelSession(this.env, this.#deployment, arg(options, CreateSessionBody)));
  }

  async send(sessionId: string, message: unknown): Promise<{ messageId: string }> {
    const id = arg(sessionId, SessionIdArg);
    return unwrap(await sessionStub(this.env, id).send(ADMIN, compact(arg(message, SendMessageBody))));
  }

  /** Deletes the session and its whole tree (each member answers "not found" from now on). */
  async delete(sessionId: string): Promise<{ accepted: true }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).deleteTree(ADMIN));
  }

  /** The session's recurring schedules, oldest first. */
  async schedules(sessionId: string): Promise<{ schedules: Schedule[] }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).schedules(ADMIN));
  }

  /** A recurring schedule: `{cron, content, timezone?}`; resolves its id and first firing time. */
  async schedule(sessionId: string, schedule: unknown): Promise<{ scheduleId: string; next: number }> {
    const body = compact(arg(schedule, CreateScheduleBody));
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).createSchedule(ADMIN, body));
  }

  async unschedule(sessionId: string, scheduleId: string): Promise<void> {
    const id = arg(scheduleId, z.string().min(1).max(64));
    unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).deleteSchedule(ADMIN, id));
  }

  async start(parentId: string, request: unknown): Promise<RunHandle> {
    const id = arg(parentId, SessionIdArg);
    const checked: StartRequest = compact(arg(request, StartRequestSchema));
    const started = unwrap(await sessionStub(this.env, id).startRun(ADMIN, checked));
    return new RunHandle(this.env, id, started);
  }

  async interrupt(sessionId: string): Promise<{ accepted: true }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).interrupt(ADMIN));
  }

  /** Compacts the session's model view before its next model step (at once when it is idle). */
  async compact(sessionId: string): Promise<{ accepted: true }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).compact(ADMIN));
  }

  /** The pending approvals of the session and its descendants, oldest first. */
  async approvals(sessionId: string): Promise<{ approvals: PendingApproval[] }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).approvals(ADMIN));
  }

  /**
   * Decides an approval of the session's subtree (`by` "admin"); `scope` as the HTTP body's
   * (default `once`; one the approval does not offer is `SCOPE_NOT_OFFERED`).
   */
  async decide(
    sessionId: string,
    approvalId: string,
    decision: unknown,
    reason?: unknown,
    scope?: unknown,
  ): Promise<{ approvalId: string; decision: "approve" | "deny" }> {
    const body = compact(arg(compact({ decision, reason, scope }), DecideApprovalBody));
    return unwrap(
      await sessionStub(this.env, arg(sessionId, SessionIdArg)).decideApproval(
        ADMIN,
        arg(approvalId, SessionIdArg),
        body,
      ),
    );
  }

  async events(sessionId: string, after = -1, limit = 100): Promise<EventPage> {
    const query = arg(
      { after, limit },
      z.strictObject({ after: z.number().int().min(-1), limit: z.number().int().min(1).max(500) }),
    );
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).events(ADMIN, query));
  }

  async describe(sessionId: string): Promise<SessionView> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).describe(ADMIN));
  }

  /** A continuable child; resolves at its inbox acceptance, before its first turn. */
  async startContinuable(
    parentId: string,
    request: unknown,
  ): Promise<{ childId: string; messageId: string }> {
    const id = arg(parentId, SessionIdArg);
    return unwrap(
      await sessionStub(this.env, id).startContinuable(ADMIN, compact(arg(request, ContinuableStartSchema))),
    );
  }

  /** The only way to continue a child (cold-resumes a settled one); as its direct parent. */
  async followup(parentId: string, childId: string, message: unknown): Promise<{ messageId: string }> {
    const id = arg(parentId, SessionIdArg);
    const child = arg(childId, SessionIdArg);
    return unwrap(
      await sessionStub(this.env, id).followupChild(ADMIN, child, compact(arg(message, FollowupBody))),
    );
  }

  /** Interrupts a child's current turn, with the parent's authority. */
  async interruptChild(parentId: string, childId: string): Promise<{ accepted: true }> {
    const id = arg(parentId, SessionIdArg);
    return unwrap(await sessionStub(this.env, id).interruptChild(ADMIN, arg(childId, SessionIdArg)));
  }

  /** Drains every descendant (no ids) or the given direct children, child-first. */
  async drain(parentId: string, childIds?: unknown): Promise<{ drained: string[] }> {
    const id = arg(parentId, SessionIdArg);
    const { childIds: ids } = arg(childIds === undefined ? {} : { childIds }, DrainBody);
    return unwrap(await sessionStub(this.env, id).drainChildren(ADMIN, ids));
  }

  async listChildren(sessionId: string): Promise<{ entries: ChildEntry[] }> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).listChildren(ADMIN));
  }

  async listDescendants(sessionId: string): Promise<DescendantListing> {
    return unwrap(await sessionStub(this.env, arg(sessionId, SessionIdArg)).listDescendants(ADMIN));
  }
}
