import { attributeOf, type OtlpSpan, type SubagentsClient, spansOfTrace } from "../../src/client";
import { h, replace } from "./dom";
import { shortId } from "./format";
import { attempt } from "./notice";

/** The most pages of a trace (4 MiB each) the waterfall reads. */
const MAX_TRACE_PAGES = 4;
/**
 * The selected session's trace as a waterfall (`GET /v1/sessions/:id/trace`: its spans and those
 * of every session below it): one row per span in tree order (a span under its parent, siblings by
 * start; a span whose parent is not in the answer starts a tree of its own), indented by its
 * nesting, with its name, duration, tokens and cost when the span has them, and a bar placed on
 * one time axis from the earliest start to the latest end. Agents (`invoke_agent`), model calls
 * (`chat`) and tool calls (`execute_tool`) have a colour each (`gen_ai.operation.name`); a span
 * whose status is an error and a turn still running are marked. The trace is read only while it
 * is shown: when it is opened, when its session changes, and (shortly after, coalesced) whenever
 * the dashboard says the session's spans may have changed.
 */

export interface TraceDeps {
  client(): SubagentsClient | undefined;
  /** Whether the session was deleted from this page (its reads failing then is expected). */
  gone(id: string): boolean;
}

/** Log events that add or end a span of the session whose log they are in (src/trace/spans.ts). */
export const SPAN_EVENTS: ReadonlySet<string> = new Set([
  "turn/start",
  "turn/end",
  "assistant/message",
  "tool/result",
  "context/compacted",
  "mcp/call",
  "mcp/result",
]);

/** OTLP status code of a failed span. */
const STATUS_ERROR = 2;

/** What the waterfall shows of a span. */
interface TraceRow {
  span: OtlpSpan;
  depth: number;
  /** Epoch ms (fractional: OTLP times are nanoseconds). */
  start: number;
  end: number;
  operation: string;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  costUsd: number | undefined;
  error: string | undefined;
  inProgress: boolean;
}

export class TracePanel {
  readonly #root: HTMLElement;
  readonly #deps: TraceDeps;
  readonly #summary: HTMLElement;
  readonly #body: HTMLElement;
  #sessionId: string | undefined;
  #rows: TraceRow[] | undefined;
  #visible = false;
  /** Numbers the reads: only the newest one's answer is shown. */
  #generation = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #painted = "";

  constructor(root: HTMLElement, deps: TraceDeps) {
    this.#root = root;
    this.#deps = deps;
    this.#summary = h("div", { class: "trace-summary" });
    this.#body = h("div", { class: "trace-body" });
    const refresh = h(
      "button",
      {
        type: "button",
        class: "secondary",
        "data-action": "refresh-trace",
        title: "Read the trace again",
        onclick: () => this.soon(0),
      },
      "Refresh",
    );
    replace(root, h("div", { class: "trace-head" }, this.#summary, refresh), this.#body);
  }

  /** Whose trace is shown (undefined: none); read at once if the view is open. */
  show(sessionId: string | undefined): void {
    if (sessionId === this.#sessionId) return;
    this.#generation++;
    this.#sessionId = sessionId;
    this.#rows = undefined;
    this.#root.dataset.traceFor = sessionId ?? "";
    delete this.#root.dataset.spans;
    this.#paint();
    if (sessionId) this.soon(0);
  }

  clear(): void {
    this.show(undefined);
  }

  /** Opens or closes the view; a closed view reads nothing. */
  setVisible(visible: boolean): void {
    this.#visible = visible;
    this.#root.hidden = !visible;
    if (visible) this.soon(0);
  }

  /** Whether the trace as last read has a turn still running (so reading it again shows more). */
  live(): boolean {
    return this.#rows?.some((r) => r.inProgress) ?? false;
  }

  /** Reads the trace shortly, if it is shown (a burst of events, as when a transcript replays, reads once). */
  soon(delayMs = 300): void {
    if (!this.#visible || !this.#sessionId) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const client = this.#deps.client();
      if (client && this.#visible) void attempt("reading the trace", () => this.refresh(client));
    }, delayMs);
  }

  /** Reads the shown session's trace; a failure of a read no longer wanted is dropped. */
  async refresh(client: SubagentsClient): Promise<void> {
    const sessionId = this.#sessionId;
    if (!sessionId) return;
    const generation = ++this.#generation;
    const spans: OtlpSpan[] = [];
    try {
      // a trace past 4 MiB comes in pages: the waterfall draws the first MAX_TRACE_PAGES of them
      let page = await client.trace(sessionId);
      spans.push(...spansOfTrace(page));
      for (let read = 1; page.next !== undefined && read < MAX_TRACE_PAGES; read++) {
        page = await client.trace(sessionId, { cursor: page.next });
        spans.push(...spansOfTrace(page));
      }
    } catch (error) {
      if (generation === this.#generation && !this.#deps.gone(sessionId)) throw error;
      return;
    }
    if (generation !== this.#generation) return;
    this.#rows = traceRows(spans);
    this.#paint();
  }

  #paint(): void {
    const rows = this.#rows;
    // an unchanged trace keeps its elements (a refresh while idle repaints nothing)
    const painted = JSON.stringify([this.#sessionId, rows?.map((r) => r.span)]);
    if (painted === this.#painted) return;
    this.#painted = painted;
    if (rows === undefined) {
      replace(this.#summary, this.#sessionId ? h("span", { class: "muted" }, "reading the trace…") : null);
      this.#body.replaceChildren();
      return;
    }
    this.#root.dataset.spans = String(rows.length);
    replace(this.#summary, summary(rows));
    if (rows.length === 0) {
      replace(
        this.#body,
        h("p", { class: "muted trace-empty" }, "No spans yet: the session has not run a turn."),
      );
      return;
    }
    const t0 = Math.min(...rows.map((r) => r.start));
    const t1 = Math.max(...rows.map((r) => r.end));
    const range = Math.max(t1 - t0, 1);
    replace(
      this.#body,
      axis(range),
      h(
        "ol",
        { class: "trace-rows", "aria-label": "Spans" },
        rows.map((r) => row(r, t0, range)),
      ),
    );
  }
}

/** The spans in tree order, with their nesting depth and the figures the waterfall shows. */
function traceRows(spans: readonly OtlpSpan[]): TraceRow[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | undefined, OtlpSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    const list = children.get(parent) ?? [];
    list.push(span);
    children.set(parent, list);
  }
  const order = new Map(spans.map((s, i) => [s, i]));
  const byStart = (a: OtlpSpan, b: OtlpSpan) =>
    compareNanos(a.startTimeUnixNano, b.startTimeUnixNano) || (order.get(a) ?? 0) - (order.get(b) ?? 0);
  const out: TraceRow[] = [];
  const seen = new Set<string>();
  const visit = (span: OtlpSpan, depth: number) => {
    if (seen.has(span.spanId)) return;
    seen.add(span.spanId);
    out.push(figures(span, depth));
    for (const child of (children.get(span.spanId) ?? []).sort(byStart)) visit(child, depth + 1);
  };
  for (const root of (children.get(undefined) ?? []).sort(byStart)) visit(root, 0);
  // spans only reachable through a loop of parents (never from the runtime): shown at the top level
  for (const span of spans) visit(span, 0);
  return out;
}

function figures(span: OtlpSpan, depth: number): TraceRow {
  const start = millis(span.startTimeUnixNano);
  const number = (key: string) => {
    const value = attributeOf(span, key);
    return typeof value === "number" && Number.isFinite(value) ? value : undefined;
  };
  const operation = attributeOf(span, "gen_ai.operation.name");
  return {
    span,
    depth,
    start,
    end: Math.max(start, millis(span.endTimeUnixNano)),
    operation: typeof operation === "string" ? operation : "other",
    inputTokens: number("gen_ai.usage.input_tokens"),
    outputTokens: number("gen_ai.usage.output_tokens"),
    costUsd: number("subagents.cost_usd"),
    error: span.status.code === STATUS_ERROR ? (span.status.message ?? "error") : undefined,
    inProgress: attributeOf(span, "subagents.in_progress") === true,
  };
}

/** Decimal nanoseconds since the epoch as epoch ms (exact to the microsecond past 2^53 ns). */
function millis(nanos: string): number {
  try {
    return Number(BigInt(nanos) / 1000n) / 1000;
  } catch {
    return 0;
  }
}

function compareNanos(a: string, b: string): number {
  const d = BigInt(a) - BigInt(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** A duration as a person reads it: "0 ms", "840 ms", "1.25 s", "12.5 s", "3 min 05 s". */
function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

/** Money in USD: four decimals below a dollar ("$0.0012"), cents above. */
function usd(cost: number): string {
  if (cost > 0 && cost < 0.00005) return "<$0.0001";
  return cost >= 1 ? `$${cost.toFixed(2)}` : `$${cost.toFixed(4)}`;
}

function tokens(input: number | undefined, output: number | undefined): string {
  return `${(input ?? 0).toLocaleString()} in / ${(output ?? 0).toLocaleString()} out`;
}

/** The operations by colour, in the order the legend names them. */
const OPERATIONS: { op: string; one: string; many: string }[] = [
  { op: "invoke_agent", one: "agent turn", many: "agent turns" },
  { op: "chat", one: "model call", many: "model calls" },
  { op: "execute_tool", one: "tool call", many: "tool calls" },
];

/** The whole trace in a line: how long, what it holds (the legend), tokens and cost of its model calls. */
function summary(rows: TraceRow[]): (HTMLElement | null)[] {
  if (rows.length === 0) return [h("span", { class: "muted" }, "no spans")];
  const t0 = Math.min(...rows.map((r) => r.start));
  const t1 = Math.max(...rows.map((r) => r.end));
  // a turn's usage is its model calls': the model calls alone sum the tree without counting twice
  const chats = rows.filter((r) => r.operation === "chat");
  const input = chats.reduce((sum, r) => sum + (r.inputTokens ?? 0), 0);
  const output = chats.reduce((sum, r) => sum + (r.outputTokens ?? 0), 0);
  const costs = chats.filter((r) => r.costUsd !== undefined);
  const cost = costs.reduce((sum, r) => sum + (r.costUsd ?? 0), 0);
  const errors = rows.filter((r) => r.error !== undefined).length;
  return [
    h("span", { class: "trace-total" }, `${rows.length} spans · ${duration(t1 - t0)}`),
    ...OPERATIONS.map(({ op, one, many }) => {
      const n = rows.filter((r) => r.operation === op).length;
      return n === 0
        ? null
        : h(
            "span",
            { class: `legend op-${op}`, "data-operation": op },
            h("span", { class: "swatch", "aria-hidden": "true" }),
            `${n} ${n === 1 ? one : many}`,
          );
    }),
    input + output > 0 ? h("span", { class: "trace-tokens" }, `${tokens(input, output)} tokens`) : null,
    costs.length > 0 ? h("span", { class: "trace-cost" }, usd(cost)) : null,
    errors > 0
      ? h("span", { class: "badge span-error" }, errors === 1 ? "1 error" : `${errors} errors`)
      : null,
  ];
}

/** The time axis over the bars: gridlines at quarters, labelled from 0 to the whole range. */
function axis(range: number): HTMLElement {
  return h(
    "div",
    { class: "trace-axis", "aria-hidden": "true" },
    h("span", { class: "axis-label" }, "span"),
    h("span", { class: "axis-duration" }, "duration"),
    h(
      "span",
      { class: "axis-track" },
      [0, 0.25, 0.5, 0.75, 1].map((at) =>
        h("span", { class: "tick", style: `--at: ${at * 100}%` }, at === 0 ? "0" : duration(range * at)),
      ),
    ),
  );
}

function row(r: TraceRow, t0: number, range: number): HTMLElement {
  const { span } = r;
  const space = span.name.indexOf(" ");
  const op = space < 0 ? span.name : span.name.slice(0, space);
  const subject = space < 0 ? "" : span.name.slice(space + 1);
  const ms = r.end - r.start;
  const left = ((r.start - t0) / range) * 100;
  const width = (ms / range) * 100;
  const agentId = attributeOf(span, "gen_ai.agent.id");
  const model = attributeOf(span, "gen_ai.request.model");
  const stop = attributeOf(span, "subagents.stop_reason");
  const title = [
    span.name,
    `starts at +${duration(r.start - t0)}, lasts ${duration(ms)}`,
    typeof agentId === "string" ? `session ${agentId}` : null,
    r.operation === "chat" && typeof model === "string" ? `model ${model}` : null,
    typeof stop === "string" ? `stop reason ${stop}` : null,
    r.error === undefined ? null : `error: ${r.error}`,
    r.inProgress ? "still running" : null,
  ]
    .filter((line) => line !== null)
    .join("\n");
  return h(
    "li",
    {
      class: `span-row op-${OPERATIONS.some((o) => o.op === r.operation) ? r.operation : "other"}`,
      "data-span-id": span.spanId,
      "data-parent-span-id": span.parentSpanId,
      "data-trace-id": span.traceId,
      "data-name": span.name,
      "data-operation": r.operation,
      "data-depth": r.depth,
      "data-start-ms": r.start - t0,
      "data-duration-ms": ms,
      "data-agent-session": typeof agentId === "string" ? agentId : undefined,
      "data-input-tokens": r.inputTokens,
      "data-output-tokens": r.outputTokens,
      "data-cost-usd": r.costUsd,
      "data-error": r.error !== undefined,
      "data-in-progress": r.inProgress,
      title,
      style: `--depth: ${r.depth}; --left: ${left}%; --width: ${width}%`,
    },
    h(
      "span",
      { class: "span-label" },
      h(
        "span",
        { class: "span-name" },
        h("span", { class: "span-op" }, op),
        subject ? ` ${subjectText(subject)}` : null,
      ),
      r.inputTokens === undefined && r.outputTokens === undefined
        ? null
        : h("span", { class: "span-tokens" }, tokens(r.inputTokens, r.outputTokens)),
      r.costUsd === undefined ? null : h("span", { class: "span-cost" }, usd(r.costUsd)),
      r.error === undefined ? null : h("span", { class: "badge span-error" }, "error"),
      r.inProgress ? h("span", { class: "badge span-running" }, "running") : null,
    ),
    h("span", { class: "span-duration" }, duration(ms)),
    h("span", { class: "span-track" }, h("span", { class: "span-bar" })),
  );
}

/** A session id as a span's subject is long: its first eight characters say enough beside the tree. */
function subjectText(subject: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(subject)
    ? shortId(subject)
    : subject;
}
