import { defined, id } from "./deployment-calls";
import { SubagentError } from "./errors";
import { SessionCalls } from "./session-calls";
import type { CallOptions } from "./transport";
import type {
  ChildEntry,
  Content,
  DescendantEntry,
  DescendantListing,
  MessageDelivery,
  OutboxEntry,
  RunView,
  StartContinuableRequest,
  StartedChild,
  StartedRun,
  StartOneShotRequest,
} from "./types";

/**
 * The typed client of the public HTTP API (docs/api.md): one method per route, every failure a
 * `SubagentError`, and a reconnecting event stream. Needs only `fetch` and `WebSocket`. Built in
 * layers, one file each: the connection and the deployment's routes (deployment-calls.ts), the
 * calls on a session (session-calls.ts), and here the calls of delegation.
 */

export { type ClientOptions, sessionOfToken } from "./deployment-calls";

const MAX_RUN_WAIT_MS = 30_000;

export class SubagentsClient extends SessionCalls {
  /** `POST /v1/sessions/:id/subagents` with mode one-shot: a run with exactly one result. */
  startOneShot(parentId: string, request: StartOneShotRequest, options?: CallOptions): Promise<StartedRun> {
    const body = { ...request, mode: "one-shot" };
    return this.http.request("POST", `/v1/sessions/${id(parentId)}/subagents`, { ...options, body });
  }

  /** `POST /v1/sessions/:id/subagents` with mode continuable: a child that takes follow-ups. */
  startContinuable(
    parentId: string,
    request: StartContinuableRequest,
    options?: CallOptions,
  ): Promise<StartedChild> {
    const body = { ...request, mode: "continuable" };
    return this.http.request("POST", `/v1/sessions/${id(parentId)}/subagents`, { ...options, body });
  }

  /** `GET /v1/sessions/:id/runs/:runId`, long-polling up to `wait` ms (<= 30000) for settlement. */
  getRun(
    parentId: string,
    runId: string,
    query: { wait?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<RunView> {
    const wait = query.wait === undefined ? undefined : Math.max(0, Math.min(MAX_RUN_WAIT_MS, query.wait));
    return this.http.request("GET", `/v1/sessions/${id(parentId)}/runs/${id(runId)}`, {
      ...options,
      query: { wait },
      timeoutMs: (options?.timeoutMs ?? 30_000) + (wait ?? 0),
    });
  }

  /** Long-polls a run until it settles (or `timeoutMs`, default unbounded, passes: `TIMEOUT`). */
  async waitForRun(parentId: string, runId: string, options: CallOptions = {}): Promise<RunView> {
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new SubagentError(0, "TIMEOUT", `run ${runId} did not settle in time`);
      const view = await this.getRun(
        parentId,
        runId,
        { wait: Math.min(MAX_RUN_WAIT_MS, left) },
        { signal: options.signal },
      );
      if (view.state === "settled") return view;
    }
  }

  /** `DELETE /v1/sessions/:id/runs/:runId`: dispose (cancel, then quiesce in the background). */
  async disposeRun(parentId: string, runId: string, options?: CallOptions): Promise<void> {
    await this.http.request("DELETE", `/v1/sessions/${id(parentId)}/runs/${id(runId)}`, options);
  }

  /**
   * `POST /v1/sessions/:id/subagents/:childId/messages`: a follow-up (cold-resumes a settled
   * child); `delivery` as for `sendMessage`.
   */
  followUp(
    parentId: string,
    childId: string,
    content: Content,
    options?: CallOptions & { delivery?: MessageDelivery | undefined },
  ): Promise<{ messageId: string }> {
    const { delivery, ...rest } = options ?? {};
    return this.http.request("POST", `/v1/sessions/${id(parentId)}/subagents/${id(childId)}/messages`, {
      ...rest,
      body: defined({ content, delivery }),
    });
  }

  /** `POST /v1/sessions/:id/subagents/:childId/interrupt`: the parent interrupts its child. */
  interruptChild(parentId: string, childId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.http.request(
      "POST",
      `/v1/sessions/${id(parentId)}/subagents/${id(childId)}/interrupt`,
      options,
    );
  }

  /** `POST /v1/sessions/:id/subagents/drain`: settles the given children (all descendants if absent). */
  async drain(parentId: string, childIds?: string[], options?: CallOptions): Promise<string[]> {
    const body = childIds === undefined ? {} : { childIds };
    const answer = await this.http.request<{ drained: string[] }>(
      "POST",
      `/v1/sessions/${id(parentId)}/subagents/drain`,
      { ...options, body },
    );
    return answer.drained;
  }

  /** `GET /v1/sessions/:id/children`: child rows and diagnostics. */
  async children(sessionId: string, options?: CallOptions): Promise<ChildEntry[]> {
    const body = await this.http.request<{ entries: ChildEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/children`,
      options,
    );
    return body.entries;
  }

  /** `GET /v1/sessions/:id/descendants`: every descendant in stable pre-order, with parent and depth. */
  async descendants(sessionId: string, options?: CallOptions): Promise<DescendantEntry[]> {
    const body = await this.http.request<{ entries: DescendantEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/descendants`,
      options,
    );
    return body.entries;
  }

  /** `GET /v1/sessions/:id/descendants` as a whole: the rows and the tree's total usage (`subtreeUsage`). */
  descendantListing(sessionId: string, options?: CallOptions): Promise<DescendantListing> {
    return this.http.request<DescendantListing>("GET", `/v1/sessions/${id(sessionId)}/descendants`, options);
  }

  /** `GET /v1/sessions/:id/outbox`: what this session sent or is sending to others, dead letters included. */
  async outbox(sessionId: string, options?: CallOptions): Promise<OutboxEntry[]> {
    const body = await this.http.request<{ entries: OutboxEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/outbox`,
      options,
    );
    return body.entries;
  }
}
