import type { FarCheck, FarEvent, FarRun, FarSnapshot } from "./far-side-checker";
import { checkFarSide } from "./far-side-checker";
import type { FarFault, FarPoint, NetKind, Provider } from "./far-side-plan";
import type { Op, Outcome } from "./harness";

/**
 * Synthetic far-side seeds for the checker's own tests: a history of far operations, the faults
 * and resets around them, and the root's log as a correct runtime writes it, on one timeline
 * (`now`, in ms: the history's clock is `now`, the events' clock `CLOCK0 + now`). Each builder
 * call writes what the operation leaves behind when it goes as scripted; options plant damage.
 */

export const CLOCK0 = 1_800_000_000_000;
export const TOOL_TIMEOUT_MS = 300;

export interface StartOptions {
  /** The run's stop reason (default completed). */
  stopReason?: string;
  /** The run's result text (default its far side's answer). */
  text?: string;
  /** How many `subagent/end` the run got (default 1). */
  ends?: number;
  /** How many far sessions took its prompt (default 1 for remote and A2A, 0 for ACP). */
  farSessions?: number;
  /** How many messages with its prompt they received (default as many as sessions). */
  farPrompts?: number;
  /** How long the run takes (default 100 ms). */
  ms?: number;
}

export interface CallOptions {
  /** The call's result text (default the scripted answer). */
  text?: string;
  isError?: boolean;
  /** How many results the call got in its turn (default 1), and how many times the model made it. */
  results?: number;
  calls?: number;
  ms?: number;
}

export class World {
  readonly history: Op[] = [];
  readonly faults: FarFault[] = [];
  readonly log: FarEvent[] = [];
  readonly runs: FarRun[] = [];
  readonly farSessions: Record<string, number> = {};
  readonly farPrompts: Record<string, number> = {};
  /** `shout` calls the MCP server served: each answered MCP call counts one. */
  mcpServed = 0;
  readonly owed: string[] = [];
  now = 1_000;
  #ids = 0;

  /** Moves the timeline on. */
  wait(ms: number): this {
    this.now += ms;
    return this;
  }

  event(type: string, data: Record<string, unknown>): FarEvent {
    const event = { seq: this.log.length, type, at: CLOCK0 + this.now, data };
    this.log.push(event);
    return event;
  }

  op(
    kind: string,
    input: Record<string, unknown>,
    outcome: Outcome = "ok",
    result?: Record<string, unknown>,
  ): Op {
    const op: Op = {
      id: ++this.#ids,
      kind,
      target: "r0",
      start: this.now,
      end: this.now + 1,
      outcome,
      input,
    };
    if (result) op.result = result;
    this.history.push(op);
    this.now += 1;
    return op;
  }

  /** A one-shot start through `provider`, its run settled after `ms`. */
  start(provider: Provider, tag: string, o: StartOptions = {}): Op {
    const runId = `run-${tag}`;
    const answer = `echo: far ${tag}`;
    const op = this.op("far-start", { op: "start", provider, tag, prompt: `far ${tag}`, answer }, "ok", {
      runId,
    });
    this.event("subagent/start", { runId, provider, id: `child-${tag}`, local: false });
    if (provider !== "acp")
      this.event("subagent/remote", { runId, kind: provider, remoteId: `remote-${tag}` });
    this.wait(o.ms ?? 100);
    const stopReason = o.stopReason ?? "completed";
    for (let i = 0; i < (o.ends ?? 1); i++)
      this.event("subagent/end", { runId, provider, id: `child-${tag}`, local: false, stopReason });
    const output = [{ type: "text", text: o.text ?? (stopReason === "completed" ? answer : "") }];
    this.runs.push({
      runId,
      state: "settled",
      result: JSON.stringify({ output, stopReason, diagnostic: "x" }),
    });
    const far = o.farSessions ?? (provider === "acp" ? 0 : 1);
    if (far > 0) this.farSessions[tag] = far;
    if ((o.farPrompts ?? far) > 0) this.farPrompts[tag] = o.farPrompts ?? far;
    return op;
  }

  /** A message whose turn calls `tool` with `args`, gets `text`, and answers `final`. */
  #turn(
    kind: string,
    input: Record<string, unknown>,
    tool: string,
    args: object,
    text: string,
    final: string,
    o: CallOptions,
  ): Op {
    const messageId = `msg-${input.tag}`;
    const op = this.op(kind, input, "ok", { messageId });
    this.event("agent/inbox/claimed", { messageId, turn: 1 });
    for (let i = 0; i < (o.calls ?? 1); i++)
      this.event("assistant/message", { content: [], toolCalls: [{ id: "call-1", name: tool, args }] });
    this.wait(o.ms ?? 50);
    for (let i = 0; i < (o.results ?? 1); i++)
      this.event("tool/result", {
        toolCallId: "call-1",
        name: tool,
        content: [{ type: "text", text: o.text ?? text }],
        isError: o.isError ?? false,
      });
    this.event("assistant/message", { content: [{ type: "text", text: final }], stopReason: "end" });
    return op;
  }

  mcp(tag: string, o: CallOptions = {}): Op {
    if (!o.isError) this.mcpServed++;
    const args = { text: `mcp ${tag}` };
    return this.#turn(
      "far-mcp",
      { tag },
      "mcp__tools__shout",
      args,
      `MCP ${tag.toUpperCase()}`,
      `shouted ${tag}`,
      o,
    );
  }

  tool(tag: string, o: CallOptions = {}): Op {
    const args = { tag, behaviour: "answer" };
    return this.#turn(
      "far-tool",
      { op: "tool", tag, behaviour: "answer" },
      "far_tool",
      args,
      `tool ${tag}`,
      `tooled ${tag}`,
      o,
    );
  }

  /** A call on the MCP face: answered (its child ended once) unless `outcome` says it failed. */
  face(tag: string, o: { outcome?: Outcome; text?: string; isError?: boolean; ms?: number } = {}): Op {
    const start = this.now;
    const op = this.op("far-face", { op: "face", tag }, o.outcome ?? "ok");
    const text = `echo: face ${tag}`;
    this.event("subagent/start", {
      runId: `run-face-${tag}`,
      provider: "spawn",
      id: `c-${tag}`,
      local: true,
    });
    this.wait(o.ms ?? 50);
    this.event("subagent/end", {
      runId: `run-face-${tag}`,
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text }],
    });
    op.start = start;
    op.end = this.now;
    if (op.outcome === "ok") op.result = { text: o.text ?? text, isError: o.isError ?? false };
    else op.code = "TypeError: Network connection lost.";
    return op;
  }

  /** A network fault at `at` (default now) on `point`, on a request described by `detail`. */
  fault(point: FarPoint, kind: NetKind = "down", o: { at?: number; detail?: string } = {}): FarFault {
    const at = o.at ?? this.now;
    const fault = { kind, point, at, clock: CLOCK0 + at, detail: o.detail ?? "POST /mcp initialize" };
    this.faults.push(fault);
    return fault;
  }

  /** An abort step at `at`; `took` false for one that never reached the instance. */
  abort(at: number, took = true): Op {
    const op: Op = { id: ++this.#ids, kind: "abort", target: "r0", start: at, end: at, outcome: "ok" };
    op.result = took
      ? { outcome: "aborted", effectAt: at, effectClock: CLOCK0 + at }
      : { outcome: "timeout" };
    this.history.push(op);
    return op;
  }

  /** An evict step at `at`: it evicted a running instance, or found none running (no reset). */
  evict(at: number, outcome: "evicted" | "not-running"): Op {
    const op: Op = { id: ++this.#ids, kind: "evict", target: "r0", start: at, end: at, outcome: "ok" };
    op.result =
      outcome === "evicted"
        ? { outcome, evicted: true, effectAt: at, effectClock: CLOCK0 + at }
        : { outcome, effectAt: at, effectClock: CLOCK0 + at };
    this.history.push(op);
    return op;
  }

  snapshot(): FarSnapshot {
    return {
      log: this.log,
      runs: this.runs,
      farSessions: this.farSessions,
      farPrompts: this.farPrompts,
      mcpServed: this.mcpServed,
      owed: this.owed,
    };
  }

  check(): FarCheck {
    return checkFarSide(this.history, this.faults, this.snapshot(), { toolTimeoutMs: TOOL_TIMEOUT_MS });
  }
}

/** `category: message` of each violation, for assertions that name what was found. */
export function found(check: FarCheck): string[] {
  return check.violations.map((v) => `${v.category}: ${v.message}`);
}
