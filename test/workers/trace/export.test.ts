import { afterEach, describe, expect, inject, it } from "vitest";
import { api, createSession, sendMessage } from "../../support/api";
import { count, eventually, sleep, waitForEvents, waitForTurnEnds } from "../../support/logs";
import { evict, sqlRows } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";
import { connectMcpFace } from "../../support/mcp-face";
import {
  agentOf,
  type DecodedSpan,
  type DecodeResult,
  type ReceivedExport,
  type ReceiverMode,
} from "../../setup/otlp-receiver";

/**
 * OTLP/HTTP export (README "Traces"): this project's Worker has OTEL_EXPORTER_OTLP_ENDPOINT set to
 * the tests' receiver (vitest.config.ts), which decodes every request with the official OTLP
 * definitions (test/setup/otlp-receiver.ts) and can be told to fail.
 */

const receiver = inject("otlpReceiver");

async function control<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${receiver.control}${path}`, {
    method,
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`receiver ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const setMode = (mode: ReceiverMode) => control("POST", "/__mode", mode);

/** The requests the collector got that carry spans of session `id`. */
async function exportsOf(id: string): Promise<ReceivedExport[]> {
  const { exports } = await control<{ exports: ReceivedExport[] }>("GET", "/__exports");
  return exports.filter((e) => e.spans.some((s) => agentOf(s) === id));
}

/** The spans of the requests the collector accepted (answered 2xx). */
const accepted = (exports: readonly ReceivedExport[]): DecodedSpan[] =>
  exports.filter((e) => e.status === 200).flatMap((e) => e.spans);

/** `GET …/trace` of a session, decoded the same way as the exports. */
async function routeSpans(id: string, token: string): Promise<DecodedSpan[]> {
  const res = await api("GET", `/v1/sessions/${id}/trace`, { token });
  expect(res.status).toBe(200);
  const decoded = await control<DecodeResult>("POST", "/__decode", JSON.stringify(res.body));
  if (!decoded.ok) throw new Error(`the route's trace does not decode: ${decoded.error}`);
  return decoded.request.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
}

const bySpanId = (spans: readonly DecodedSpan[]) =>
  [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));

/** The session's trace flags (trace:cursor, trace:retry, trace:dropped). */
async function traceFlags(id: string): Promise<Record<string, string>> {
  const rows = await sqlRows<{ name: string; value: string }>(
    id,
    "SELECT name, value FROM flags WHERE name LIKE 'trace:%'",
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

const ECHO_TURN = script({ call: [toolCall("echo", { text: "ping" })] }, { say: "done" });

describe("OTLP/HTTP export of each session's finished spans (README 'Traces')", () => {
  afterEach(async () => {
    await setMode({ mode: "ok" });
  });

  it("a finished turn arrives as one request, decoded, with service.name and the configured headers: the spans GET …/trace shows", async () => {
    const { id, token } = await createSession({ label: "exported" });
    await sendMessage(id, ECHO_TURN);
    await waitForTurnEnds(id, 1);
    const [request] = await eventually(
      () => exportsOf(id),
      (e) => e.length >= 1,
      { what: "the export" },
    );
    expect(request!.error).toBeUndefined();
    expect(request).toMatchObject({
      path: "/v1/traces",
      contentType: "application/json",
      status: 200,
      decoded: true,
      serviceName: "subagents-export-test",
    });
    // OTEL_EXPORTER_OTLP_HEADERS, percent-decoded; its malformed entry left out
    expect(request!.headers["x-otlp-token"]).toBe("s3cret token");
    expect(request!.headers.authorization).toBe("Basic b3RlbDpwdw==");
    expect(Object.keys(request!.headers)).not.toContain("malformed");
    expect(request!.spans.map((s) => s.name).sort()).toEqual([
      "chat scripted",
      "chat scripted",
      "execute_tool echo",
      "invoke_agent exported",
    ]);
    expect(bySpanId(request!.spans)).toEqual(bySpanId(await routeSpans(id, token)));
    // this deployment opted in to content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT):
    // the GenAI conventions' message JSON on the turn and its steps, the call's arguments and result
    const text = (name: string, key: string) => {
      const span = request!.spans.find((s) => s.name === name)!;
      return span.attributes.find((a) => a.key === key)?.value.stringValue as string | undefined;
    };
    expect(JSON.parse(text("invoke_agent exported", "gen_ai.input.messages")!)).toEqual([
      { role: "user", parts: [{ type: "text", content: ECHO_TURN }] },
    ]);
    expect(JSON.parse(text("invoke_agent exported", "gen_ai.output.messages")!)).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "done" }] },
    ]);
    expect(JSON.parse(text("execute_tool echo", "gen_ai.tool.call.arguments")!)).toEqual({ text: "ping" });
    expect(text("execute_tool echo", "gen_ai.tool.call.result")).toBe("ping");
    // nothing more is owed: no second request, the cursor at the log's end
    await sleep(500);
    expect(await exportsOf(id)).toHaveLength(1);
    const flags = await traceFlags(id);
    expect(flags["trace:retry"]).toBeUndefined();
    expect(JSON.parse(flags["trace:cursor"]!).through).toBeGreaterThan(0);
  });

  it("a turn still running sends nothing; each turn that ends is one request", async () => {
    const { id, token } = await createSession({ label: "slow" });
    await sendMessage(id, ECHO_TURN);
    await waitForTurnEnds(id, 1);
    await eventually(
      () => exportsOf(id),
      (e) => e.length === 1,
      { what: "the first turn's export" },
    );
    await sendMessage(
      id,
      script({ call: [toolCall("echo", { text: "a" })] }, { think: 1_500 }, { say: "late" }),
    );
    // its first step and tool call are done, the turn is not
    await waitForEvents(id, (es) => count(es, "tool/result") >= 2, { what: "the second turn's tool result" });
    await sleep(700);
    expect(count(await waitForEvents(id, () => true), "turn/end")).toBe(1);
    expect(await exportsOf(id)).toHaveLength(1);
    await waitForTurnEnds(id, 2);
    const exports = await eventually(
      () => exportsOf(id),
      (e) => e.length === 2,
      { what: "the second export" },
    );
    expect(exports[1]!.spans.filter((s) => s.name.startsWith("invoke_agent"))).toHaveLength(1);
    expect(exports[1]!.spans).toHaveLength(4);
    expect(bySpanId(accepted(exports))).toEqual(bySpanId(await routeSpans(id, token)));
  });

  it("a collector down for a while (503s, then refused connections) gets every span once it is back; the turns did not wait for it", async () => {
    const { id, token } = await createSession({ label: "patient" });
    await setMode({ mode: "fail", status: 503, retryAfter: 1, session: id });
    await sendMessage(id, ECHO_TURN);
    const turnOne = (await waitForTurnEnds(id, 1)).find((e) => e.type === "turn/end")!;
    // the turn ended, and its spans are refused after that: the turn never waited for the collector
    const refused = await eventually(
      () => exportsOf(id),
      (e) => e.filter((r) => r.status === 503).length >= 2,
      { what: "two 503s" },
    );
    expect(refused.every((r) => r.status === 503 && r.at >= turnOne.at)).toBe(true);
    expect(JSON.parse((await traceFlags(id))["trace:retry"]!).attempts).toBeGreaterThanOrEqual(2);

    // connections refused now: a second turn ends meanwhile too
    await setMode({ mode: "refuse" });
    const attempts = JSON.parse((await traceFlags(id))["trace:retry"]!).attempts as number;
    await sendMessage(id, script({ say: "second" }));
    await waitForTurnEnds(id, 2);
    await eventually(
      async () => JSON.parse((await traceFlags(id))["trace:retry"]!).attempts as number,
      (n) => n > attempts,
      { what: "a refused try", timeoutMs: 20_000 },
    );
    expect(accepted(await exportsOf(id))).toEqual([]);

    // back: every span arrives, exactly the route's, none twice
    await setMode({ mode: "ok" });
    const route = await routeSpans(id, token);
    const exports = await eventually(
      () => exportsOf(id),
      (e) => accepted(e).length >= route.length,
      { what: "every span", timeoutMs: 60_000, intervalMs: 200 },
    );
    const spans = accepted(exports);
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
    expect(bySpanId(spans)).toEqual(bySpanId(route));
    expect(spans.filter((s) => s.name.startsWith("invoke_agent"))).toHaveLength(2);
    const flags = await traceFlags(id);
    expect(flags["trace:retry"]).toBeUndefined();
    expect(flags["trace:dropped"]).toBeUndefined();
  });

  it("a 400 drops the batch and counts it; the next turn's batch goes on", async () => {
    const { id, token } = await createSession({ label: "refused" });
    await setMode({ mode: "fail", status: 400, times: 1, session: id });
    await sendMessage(id, ECHO_TURN);
    await waitForTurnEnds(id, 1);
    const [dropped] = await eventually(
      () => exportsOf(id),
      (e) => e.length === 1,
      { what: "the refused batch" },
    );
    expect(dropped!.status).toBe(400);
    await eventually(
      () => traceFlags(id),
      (f) => f["trace:dropped"] === String(dropped!.spans.length),
      { what: "the drop counted" },
    );
    expect((await traceFlags(id))["trace:retry"]).toBeUndefined();
    await sendMessage(id, script({ say: "again" }));
    await waitForTurnEnds(id, 2);
    const exports = await eventually(
      () => exportsOf(id),
      (e) => e.length === 2,
      { what: "the next batch" },
    );
    expect(exports[1]!.status).toBe(200);
    // only the second turn: the first was never sent again
    const first = new Set(dropped!.spans.map((s) => s.spanId));
    expect(exports[1]!.spans.some((s) => first.has(s.spanId))).toBe(false);
    expect(exports[1]!.spans).toHaveLength(2);
    expect(dropped!.spans.length + exports[1]!.spans.length).toBe((await routeSpans(id, token)).length);
  });

  it("spans that waited longer than the horizon (24 h) are skipped and counted, the rest is sent", async () => {
    const { id, token } = await createSession({ label: "old" });
    // down, and asking for an hour's pause: nothing runs while the test ages the log
    await setMode({ mode: "fail", status: 503, retryAfter: 3600, session: id });
    await sendMessage(id, ECHO_TURN);
    await waitForTurnEnds(id, 1);
    const [first] = await eventually(
      () => exportsOf(id),
      (e) => e.length >= 1,
      { what: "a refused try" },
    );
    await eventually(
      () => traceFlags(id),
      (f) => f["trace:retry"] !== undefined,
      { what: "the retry stored" },
    );
    // the first turn ended 25 h ago as far as its log says, and the collector's pause is over
    await sqlRows(id, "UPDATE events SET at = at - ?", 25 * 3600_000);
    await sqlRows(
      id,
      "UPDATE flags SET value = ? WHERE name = 'trace:retry'",
      JSON.stringify({ attempts: 1, at: 0 }),
    );
    await evict(id); // a restart: the instance forgets what it read
    await setMode({ mode: "ok" });
    await sendMessage(id, script({ say: "recent" }));
    await waitForTurnEnds(id, 2);
    const exports = await eventually(
      () => exportsOf(id),
      (e) => accepted(e).length > 0,
      { what: "the recent turn", intervalMs: 100 },
    );
    const oldIds = new Set(first!.spans.map((s) => s.spanId));
    const sent = accepted(exports);
    expect(sent.some((s) => oldIds.has(s.spanId))).toBe(false);
    expect(sent.map((s) => s.name).sort()).toEqual(["chat scripted", "invoke_agent old"]);
    expect((await traceFlags(id))["trace:dropped"]).toBe(String(first!.spans.length));
    expect(first!.spans.length + sent.length).toBe((await routeSpans(id, token)).length);
  });

  it("a batch holds at most 512 spans: a turn of 520 tool calls goes out in two requests", async () => {
    const { id, token } = await createSession({ label: "wide" });
    const calls = Array.from({ length: 520 }, (_, i) => toolCall("echo", { text: `n${i}` }));
    await sendMessage(id, script({ call: calls }, { say: "all done" }));
    await waitForTurnEnds(id, 1, 60_000);
    const exports = await eventually(
      () => exportsOf(id),
      (e) => accepted(e).length >= 523,
      { what: "523 spans", timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(exports.map((e) => e.spans.length)).toEqual([512, 11]);
    expect(bySpanId(accepted(exports))).toEqual(bySpanId(await routeSpans(id, token)));
  });

  it("a session being deleted exports nothing more", async () => {
    const { id } = await createSession({ label: "doomed" });
    await setMode({ mode: "fail", status: 503, retryAfter: 1, session: id });
    await sendMessage(id, ECHO_TURN);
    await waitForTurnEnds(id, 1);
    await eventually(
      () => exportsOf(id),
      (e) => e.length >= 1,
      { what: "a refused try" },
    );
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(202);
    await setMode({ mode: "ok" });
    await sleep(2_500);
    expect(accepted(await exportsOf(id))).toEqual([]);
  });

  it("a call an MCP client made on the session's face is sent once it is answered, in the client's trace", async () => {
    const { id, token } = await createSession({ label: "mcp face" });
    const client = await connectMcpFace(id, token);
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    try {
      await client.callTool({ name: "echo", arguments: { text: "via mcp" }, _meta: { traceparent } });
    } finally {
      await client.close();
    }
    // no turn ran: the call's own span is what goes out, with no message to wake the session
    const exports = await eventually(
      () => exportsOf(id),
      (e) => accepted(e).length >= 1,
      { what: "the MCP call's export" },
    );
    const [span] = accepted(exports);
    expect(span!.name).toBe("execute_tool echo");
    expect(span!.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(span!.parentSpanId).toBe("00f067aa0ba902b7");
    expect(bySpanId(accepted(exports))).toEqual(bySpanId(await routeSpans(id, token)));
  });
});
