import {
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
} from "@opentelemetry/semantic-conventions/incubating";
import type { SessionEvent } from "../contract/events";
import { fingerprint } from "../core/hash";
import type { Span } from "../contract/trace";
import { answered, cut, messagesJson, providerModel, textOf, usageAttributes } from "./span-attributes";
import { mcpCallSpan, newTraceId, toolSpanId, turnSpanId } from "./span-ids";

export type { AttributeValue, Span, TraceContext } from "../contract/trace";
export { MAX_CONTENT_CHARS } from "./span-attributes";
export { callTrace, mcpCallSpan, newTraceId, toolSpanId, turnSpanId } from "./span-ids";

/**
 * A session's spans as a projection of its log (README "Traces"): one `invoke_agent` span per
 * turn, one `chat` span per model step and per compaction, one `execute_tool` span per tool call
 * (and per call an MCP client made on the session's face). Pure: the same events give the same
 * spans, ids included (functions of the session id, the turn, the step and the call id), so a
 * trace rebuilt after a restart, or exported twice, is the same trace. Attributes follow the
 * OpenTelemetry GenAI semantic conventions, plus this runtime's own under `subagents.`; no text
 * of a prompt, an answer or a tool call is an attribute unless the deployment opts in
 * (`content`: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). The ids are span-ids.ts, the
 * attributes' forms span-attributes.ts.
 */

export interface SessionFacts {
  sessionId: string;
  label?: string | undefined;
  /** The session's model route (`openai:gpt-4o-mini`). */
  model: string;
  depth: number;
  /** Events before this seq are a fork's seed (its parent's): not this session's spans. */
  fromSeq?: number;
  /**
   * Record what was said (opt-in: traces leave the deployment): a turn's messages and its final
   * answer, each step's answer and tool calls, each tool call's arguments and result, in the GenAI
   * conventions' JSON forms, each value cut to MAX_CONTENT_CHARS.
   */
  content?: boolean;
}

/**
 * The top-level fields of an event's data a fold never reads: `structured` never, a message's
 * text and a call's arguments only when it records content. A reader may leave them out of the
 * events it folds (never parsing a long message just to skip it); the spans are the same.
 */
export function unreadFields(content: boolean | undefined): readonly string[] {
  return content ? ["structured"] : ["content", "args", "structured"];
}

interface OpenTurn {
  span: Span;
  step: number;
  /** When the current step began (the previous event of the turn). */
  mark: number;
  /** Tool calls made and not answered yet, by call id. */
  calls: Map<string, Span>;
  /** Its first message was seen: the trace it continues is decided. */
  traced: boolean;
  /** With content: the text of its messages, and of its last answer. */
  said: string[];
  answer?: string;
}

/**
 * A session's spans, folded one event at a time: each span is handed to `emit` once, when it is
 * complete (a step's `chat` at its answer, a tool call at its result, a turn at its end with the
 * calls its end left unanswered, and what is still open when `end` is called). Between two
 * events the fold holds only what is open: the running turn, its unanswered calls and the MCP
 * face's unanswered calls, never the spans it already emitted, so a log of any length folds in
 * the memory of one turn. Where nothing is open (`quiet`), a fold started afresh at the next
 * event goes on exactly as this one would.
 */
export class SpanFold {
  readonly #facts: SessionFacts;
  readonly #emit: (span: Span) => void;
  readonly #begin: (span: Span) => void;
  readonly #agent: string;
  readonly #common: Record<string, string>;
  #open: OpenTurn | undefined;
  readonly #mcpCalls = new Map<string, Span>();
  #last = 0;

  /** `begin`: each span as it begins, not complete yet (the whole-log projection keeps this order). */
  constructor(facts: SessionFacts, emit: (span: Span) => void, begin: (span: Span) => void = () => {}) {
    this.#facts = facts;
    this.#emit = emit;
    this.#begin = begin;
    this.#agent = facts.label ?? facts.sessionId;
    this.#common = {
      [ATTR_GEN_AI_AGENT_ID]: facts.sessionId,
      [ATTR_GEN_AI_CONVERSATION_ID]: facts.sessionId,
    };
  }

  /** Nothing is open: no turn, no unanswered call of the MCP face. */
  quiet(): boolean {
    return this.#open === undefined && this.#mcpCalls.size === 0;
  }

  /** The log ends here: a turn still running emits its spans so far, ending at the last event. */
  end(): void {
    const open = this.#open;
    if (open) {
      open.span.end = this.#last;
      open.span.attributes["subagents.in_progress"] = true;
      for (const tool of open.calls.values()) {
        tool.end = this.#last;
        this.#emit(tool);
      }
      this.#emit(open.span);
      this.#open = undefined;
    }
    for (const span of this.#mcpCalls.values()) this.#emit(span);
    this.#mcpCalls.clear();
  }

  add(event: SessionEvent): void {
    const facts = this.#facts;
    const { sessionId } = facts;
    const common = this.#common;
    if (event.seq < (facts.fromSeq ?? 0)) return;
    this.#last = event.at;
    const open = this.#open;
    switch (event.type) {
      case "turn/start": {
        // a turn whose end never came (a crash): its spans as they stood
        if (open) {
          for (const tool of open.calls.values()) this.#emit(tool);
          this.#emit(open.span);
        }
        const turn = (event.data as { turn: number }).turn;
        // a trace of its own, unless its first message continues another (below)
        const span: Span = {
          traceId: newTraceId(sessionId, turn),
          spanId: turnSpanId(sessionId, turn),
          name: `invoke_agent ${this.#agent}`,
          kind: "internal",
          start: event.at,
          end: event.at,
          attributes: {
            ...common,
            [ATTR_GEN_AI_OPERATION_NAME]: "invoke_agent",
            [ATTR_GEN_AI_AGENT_NAME]: this.#agent,
            [ATTR_GEN_AI_REQUEST_MODEL]: providerModel(facts.model),
            "subagents.turn": turn,
            "subagents.depth": facts.depth,
          },
        };
        this.#begin(span);
        this.#open = { span, step: 0, mark: event.at, calls: new Map(), traced: false, said: [] };
        break;
      }
      case "assistant/message": {
        if (!open) break;
        const data = event.data as SessionEvent<"assistant/message">["data"];
        open.step += 1;
        open.traced = true;
        const chat: Span = {
          traceId: open.span.traceId,
          spanId: fingerprint(`${open.span.spanId}/step/${open.step}`),
          parentSpanId: open.span.spanId,
          name: `chat ${data.model}`,
          kind: "client",
          start: open.mark,
          end: event.at,
          attributes: {
            ...common,
            [ATTR_GEN_AI_OPERATION_NAME]: "chat",
            [ATTR_GEN_AI_REQUEST_MODEL]: providerModel(data.model),
            [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [data.stopReason],
            ...usageAttributes(data.usage),
            "subagents.step": open.step,
            ...(facts.content
              ? {
                  [ATTR_GEN_AI_OUTPUT_MESSAGES]: messagesJson(
                    "assistant",
                    [textOf(data.content)],
                    data.toolCalls,
                    data.stopReason,
                  ),
                }
              : {}),
          },
        };
        this.#begin(chat);
        this.#emit(chat);
        if (facts.content) open.answer = textOf(data.content);
        for (const call of data.toolCalls ?? []) {
          const tool: Span = {
            traceId: open.span.traceId,
            spanId: toolSpanId(sessionId, open.span.attributes["subagents.turn"] as number, call.id),
            parentSpanId: chat.spanId,
            name: `execute_tool ${call.name}`,
            kind: "internal",
            start: event.at,
            end: event.at,
            attributes: {
              ...common,
              [ATTR_GEN_AI_OPERATION_NAME]: "execute_tool",
              [ATTR_GEN_AI_TOOL_NAME]: call.name,
              [ATTR_GEN_AI_TOOL_CALL_ID]: call.id,
              ...(facts.content
                ? { [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: cut(JSON.stringify(call.args ?? {})) }
                : {}),
            },
          };
          this.#begin(tool);
          open.calls.set(call.id, tool);
        }
        open.mark = event.at;
        break;
      }
      case "tool/result": {
        const data = event.data as SessionEvent<"tool/result">["data"];
        const tool = open?.calls.get(data.toolCallId);
        if (!open || !tool) break;
        answered(tool, event.at, data.isError);
        if (facts.content) tool.attributes[ATTR_GEN_AI_TOOL_CALL_RESULT] = cut(textOf(data.content));
        open.calls.delete(data.toolCallId);
        open.mark = event.at;
        this.#emit(tool);
        break;
      }
      case "context/compacted": {
        const data = event.data as SessionEvent<"context/compacted">["data"];
        if (!open) break;
        const compaction: Span = {
          traceId: open.span.traceId,
          spanId: fingerprint(`${open.span.spanId}/compaction/${event.seq}`),
          parentSpanId: open.span.spanId,
          name: `chat ${facts.model}`,
          kind: "client",
          start: open.mark,
          end: event.at,
          attributes: {
            ...common,
            [ATTR_GEN_AI_OPERATION_NAME]: "chat",
            [ATTR_GEN_AI_REQUEST_MODEL]: providerModel(facts.model),
            ...usageAttributes(data.usage),
            "subagents.purpose": "compaction",
            "subagents.trigger": data.trigger,
          },
        };
        this.#begin(compaction);
        this.#emit(compaction);
        open.mark = event.at;
        break;
      }
      case "mcp/call": {
        const data = event.data as SessionEvent<"mcp/call">["data"];
        // the same call id again (a crash before its result): its first span as it stood
        const earlier = this.#mcpCalls.get(data.callId);
        if (earlier) this.#emit(earlier);
        const span: Span = {
          ...mcpCallSpan(sessionId, data.callId, data.trace),
          name: `execute_tool ${data.name}`,
          kind: "internal",
          start: event.at,
          end: event.at,
          attributes: {
            ...common,
            [ATTR_GEN_AI_OPERATION_NAME]: "execute_tool",
            [ATTR_GEN_AI_TOOL_NAME]: data.name,
            [ATTR_GEN_AI_TOOL_CALL_ID]: data.callId,
            "subagents.caller": "mcp",
            ...(facts.content
              ? { [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: cut(JSON.stringify(data.args ?? {})) }
              : {}),
          },
        };
        this.#begin(span);
        this.#mcpCalls.set(data.callId, span);
        break;
      }
      case "mcp/result": {
        const data = event.data as SessionEvent<"mcp/result">["data"];
        const span = this.#mcpCalls.get(data.callId);
        if (!span) break;
        answered(span, event.at, data.isError);
        if (facts.content) span.attributes[ATTR_GEN_AI_TOOL_CALL_RESULT] = cut(textOf(data.content));
        this.#mcpCalls.delete(data.callId);
        this.#emit(span);
        break;
      }
      case "turn/end": {
        if (!open) break;
        const data = event.data as SessionEvent<"turn/end">["data"];
        const span = open.span;
        span.end = event.at;
        Object.assign(span.attributes, usageAttributes(data.usage), {
          [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [data.reason],
          "subagents.stop_reason": data.reason,
          ...(data.cause ? { "subagents.cause": data.cause } : {}),
          ...(facts.content
            ? {
                [ATTR_GEN_AI_INPUT_MESSAGES]: messagesJson("user", open.said),
                ...(open.answer === undefined
                  ? {}
                  : { [ATTR_GEN_AI_OUTPUT_MESSAGES]: messagesJson("assistant", [open.answer]) }),
              }
            : {}),
        });
        if (data.reason === "error") {
          span.error = data.error ?? "the turn ended in error";
          span.attributes["error.type"] = data.code ?? "turn_error";
        }
        // calls its end left unanswered end with it
        for (const tool of open.calls.values()) {
          tool.end = event.at;
          this.#emit(tool);
        }
        this.#emit(span);
        this.#open = undefined;
        break;
      }
      case "user/message": {
        if (!open) break;
        open.mark = event.at;
        // the turn continues the trace of the message that started it (a caller's traceparent,
        // the tool call that sent it), as the turn driver decided when it claimed that message
        const message = event.data as SessionEvent<"user/message">["data"];
        const trace = message.source.trace;
        if (facts.content) open.said.push(textOf(message.content));
        if (!open.traced && trace) {
          open.span.traceId = trace.traceId;
          if (trace.parentSpanId) open.span.parentSpanId = trace.parentSpanId;
        }
        open.traced = true;
        break;
      }
      default:
        if (open && event.type === "agent/inbox/claimed") open.mark = event.at;
    }
  }
}

/**
 * Every span of `events` (a whole log, or its part from `facts.fromSeq`), in the order they
 * begin: a turn before its steps, a step before its tool calls.
 */
export function spansOf(events: Iterable<SessionEvent>, facts: SessionFacts): Span[] {
  const out: Span[] = [];
  const fold = new SpanFold(
    facts,
    () => {},
    (span) => out.push(span),
  );
  for (const event of events) fold.add(event);
  fold.end();
  return out;
}
