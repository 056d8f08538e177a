import { describe, expect, it } from "vitest";
import { api, createSession, expectError, rpc, rpcFailure, startChild, startRun } from "../../support/api";
import { allEvents, count, waitForTurnEnds } from "../../support/logs";
import { script } from "../../support/scripts";

/**
 * The span a call came under (README "Traces") travels in the record the session takes (a start,
 * a follow-up, a message), set from the caller's `traceparent` header. A request body cannot
 * name one: no wire schema has `trace`. And it is not part of a start's identity: a retry of a
 * start under another span is the same start.
 */

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
const OTHER_TRACEPARENT = `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01`;
const A_SPAN = { traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN };

interface Span {
  traceId: string;
  parentSpanId?: string;
  name: string;
}

async function turnSpansOf(id: string): Promise<Span[]> {
  const res = await api("GET", `/v1/sessions/${id}/trace`);
  expect(res.status).toBe(200);
  const spans: Span[] = res.body.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
  return spans.filter((s) => s.name.startsWith("invoke_agent"));
}

describe("a caller's span comes from its traceparent header", () => {
  it("on a continuable start: the child's first turn joins the caller's trace, under the caller's span", async () => {
    const { id } = await createSession();
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "traced", prompt: script({ say: "first" }) },
      headers: { traceparent: TRACEPARENT },
    });
    expect(started.status).toBe(202);
    const { childId } = started.body as { childId: string };
    await waitForTurnEnds(childId, 1);
    const [first] = await turnSpansOf(childId);
    expect(first).toMatchObject(A_SPAN);
  });

  it("never from a body: a start, a follow-up or a message naming `trace` is refused and changes nothing", async () => {
    const { id } = await createSession();
    const { childId } = await startChild(id, { prompt: script({ say: "first" }) });
    await waitForTurnEnds(childId, 1);
    const before = await allEvents(id);
    const refused = [
      await api("POST", `/v1/sessions/${id}/subagents`, {
        body: { provider: "spawn", mode: "one-shot", prompt: "hi", trace: A_SPAN },
      }),
      await api("POST", `/v1/sessions/${id}/subagents`, {
        body: { provider: "spawn", mode: "continuable", label: "c", prompt: "hi", trace: A_SPAN },
      }),
      await api("POST", `/v1/sessions/${id}/subagents/${childId}/messages`, {
        body: { content: "again", trace: A_SPAN },
      }),
      await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "hi", trace: A_SPAN } }),
    ];
    for (const res of refused) expectError(res, 400, "INVALID_REQUEST", /trace/);
    expect(await rpcFailure(() => rpc.start(id, { provider: "spawn", prompt: "hi", trace: A_SPAN }))).toMatch(
      /^INVALID_REQUEST/,
    );
    expect(
      await rpcFailure(() =>
        rpc.startContinuable(id, { provider: "spawn", prompt: "hi", label: "c", trace: A_SPAN }),
      ),
    ).toMatch(/^INVALID_REQUEST/);
    expect(await rpcFailure(() => rpc.followup(id, childId, { content: "again", trace: A_SPAN }))).toMatch(
      /^INVALID_REQUEST/,
    );
    expect(await allEvents(id)).toEqual(before);
    expect(count(await allEvents(childId), "user/message")).toBe(1);
  });
});

describe("a start's span is not part of its identity", () => {
  it("a one-shot retry with the same reserved child id under another traceparent is the same start", async () => {
    const { id } = await createSession();
    const body = { provider: "spawn", mode: "one-shot", prompt: "once", childId: crypto.randomUUID() };
    const first = await api("POST", `/v1/sessions/${id}/subagents`, {
      body,
      headers: { traceparent: TRACEPARENT },
    });
    const retry = await api("POST", `/v1/sessions/${id}/subagents`, {
      body,
      headers: { traceparent: OTHER_TRACEPARENT },
    });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(count(await allEvents(id), "subagent/start")).toBe(1);
    // a retry with no traceparent at all is that start too
    expect((await startRun(id, { prompt: "once", childId: body.childId })).body).toEqual(first.body);
  });

  it("a continuable retry with the same reserved child id under another traceparent is the same start", async () => {
    const { id } = await createSession();
    const body = {
      provider: "spawn",
      mode: "continuable",
      label: "kept",
      prompt: script({ say: "first" }),
      childId: crypto.randomUUID(),
    };
    const first = await api("POST", `/v1/sessions/${id}/subagents`, {
      body,
      headers: { traceparent: TRACEPARENT },
    });
    const retry = await api("POST", `/v1/sessions/${id}/subagents`, {
      body,
      headers: { traceparent: OTHER_TRACEPARENT },
    });
    expect(first.status).toBe(202);
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    expect(count(await allEvents(id), "subagent/start")).toBe(1);
    // the child's turn keeps the span of the start that made it
    await waitForTurnEnds(first.body.childId, 1);
    expect((await turnSpansOf(first.body.childId))[0]).toMatchObject(A_SPAN);
  });
});
