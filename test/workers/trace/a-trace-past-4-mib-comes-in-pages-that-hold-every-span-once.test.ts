import { describe, expect, it } from "vitest";
import { api, createSession, expectError, request, sendMessage, workerFetch } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

/**
 * `GET …/trace` answers at most 4 MiB (README "Traces"): a tree whose spans take more comes in
 * pages, each OTLP JSON of its own, `next` naming the following one. Walking the pages gives
 * every span of the tree once: the root's own, then each child's tree. Before pages, the whole
 * trace was one body (and the whole log of every session in memory at once).
 */

const PAGE_BYTES = 4 * 1024 * 1024;
const CALLS_PER_STEP = 100;
const STEPS_PER_TURN = 10;
const TURNS = 8;

interface OtlpSpan {
  spanId: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** One page: its size in bytes as sent, and its body. */
async function tracePage(id: string, cursor?: string): Promise<{ bytes: number; body: any }> {
  const query = cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`;
  const response = await workerFetch(request("GET", `/v1/sessions/${id}/trace${query}`));
  expect(response.status).toBe(200);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { bytes: bytes.length, body: JSON.parse(new TextDecoder().decode(bytes)) };
}

function spansOf(body: any): OtlpSpan[] {
  return body.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
}

describe("a trace longer than one page", () => {
  it("comes in pages of at most 4 MiB whose walk holds every span of the tree once, the root's before its child's", async () => {
    const { id } = await createSession({ label: "big" });
    const calls = Array.from({ length: CALLS_PER_STEP }, (_, i) => toolCall("echo", { text: `${i}` }));
    const turn = script(...Array.from({ length: STEPS_PER_TURN }, () => ({ call: calls })), { say: "done" });
    for (let i = 0; i < TURNS; i++) await sendMessage(id, turn);
    const child = script({ call: [toolCall("echo", { text: "below" })] }, { say: "child done" });
    await sendMessage(id, script({ call: [toolCall("subagent", { description: "small", prompt: child })] }));
    await waitForTurnEnds(id, TURNS + 1, 240_000);

    const pages: { bytes: number; body: any }[] = [await tracePage(id)];
    expect(pages[0]!.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    while (pages.at(-1)!.body.next !== undefined) {
      expect(pages.length).toBeLessThan(20);
      pages.push(await tracePage(id, pages.at(-1)!.body.next));
      expect(pages.at(-1)!.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    }
    expect(pages.length).toBeGreaterThan(1);

    const spans = pages.flatMap((p) => spansOf(p.body));
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
    const named = (name: string) => spans.filter((s) => s.name === name).length;
    // the root: a turn per message, a step per call step and its answer, a span per call
    expect(named("invoke_agent big")).toBe(TURNS + 1);
    expect(named("execute_tool echo")).toBe(TURNS * STEPS_PER_TURN * CALLS_PER_STEP + 1);
    expect(named("execute_tool subagent")).toBe(1);
    // the child's spans come after every span of the root's own log
    const childTurn = spans.findIndex(
      (s) => s.name.startsWith("invoke_agent") && s.name !== "invoke_agent big",
    );
    expect(childTurn).toBeGreaterThan(spans.findLastIndex((s) => s.name === "invoke_agent big"));
  }, 300_000);

  it("refuses a cursor no page gave, and changes nothing", async () => {
    const { id } = await createSession();
    for (const bad of ["x", "s1", "s5.2", "c1/", "c-1", "s1.0/c0", `c0/${"c0/".repeat(200)}s0.-1`])
      expectError(
        await api("GET", `/v1/sessions/${id}/trace?cursor=${encodeURIComponent(bad)}`),
        400,
        "INVALID_REQUEST",
      );
    const whole = await api("GET", `/v1/sessions/${id}/trace`);
    expect(whole.status).toBe(200);
    expect(whole.body.next).toBeUndefined();
  });
});
