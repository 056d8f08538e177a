import type { ToolCall } from "../contract/events";
import { callTrace } from "../trace/span-ids";
import type { ApprovalGate } from "./approval-gate";
import { callKey } from "./call-keys";
import type { CompactorPorts } from "./compactor";
import { executeTool, type Tool, type ToolOutcome } from "./tools";
import type { Fence } from "./turns";

/**
 * The tool half of a turn's step (turn-driver.ts runs the model half): runs the tool calls a
 * model step made, under the step's fence. Calls that need a person's decision wait for it
 * (asked for here) unless it approved them; consecutive calls of concurrent tools run side by
 * side; every answer is recorded in call order, each in a transaction that re-checks the fence,
 * so a turn that moved on (an interrupt) records nothing more and runs no later call. A concluding
 * tool (a structured-output capture) ends the turn and its later calls are denied.
 */

/** What the tool runner runs with: the session's stores, turns and settings, its tools and host. */
export interface ToolRunnerPorts<Host> extends Pick<CompactorPorts, "stores" | "turns" | "settings"> {
  /** The tools the session's model sees now. */
  tools: { visibleTools(): Promise<Tool<unknown, Host>[]> };
  /** What the session's tools may ask of it. */
  host: Host;
  /** Which calls wait for a person's decision before they run (none: every call runs). */
  approvals?: ApprovalGate;
}

export class ToolRunner<Host> {
  readonly #ports: ToolRunnerPorts<Host>;

  constructor(ports: ToolRunnerPorts<Host>) {
    this.#ports = ports;
  }

  /** Runs the calls `made` of the fenced step (a restart re-runs those left unanswered). */
  async run(made: readonly ToolCall[], fence: Fence): Promise<void> {
    const { stores, turns, host, approvals } = this.#ports;
    const { sessionId } = this.#ports.settings();
    const tools = await this.#ports.tools.visibleTools();
    // calls that need a person's decision wait for it (asked for here) unless it approved them
    const gated = approvals
      ? made.filter((c) =>
          approvals.needs(
            c,
            tools.find((t) => t.name === c.name),
          ),
        )
      : [];
    const waiting =
      gated.length === 0
        ? new Set<ToolCall>()
        : stores.transact(() =>
            turns.current(fence)
              ? new Set(gated.filter((c) => approvals!.admit(fence.turn, c) === "wait"))
              : new Set(made),
          );
    const calls = made.filter((c) => !waiting.has(c));
    const run = async (call: ToolCall): Promise<ToolOutcome> => {
      const controller = new AbortController();
      const release = turns.track(controller);
      try {
        return await executeTool(
          tools,
          call.name,
          call.args,
          {
            sessionId,
            callKey: callKey(fence.turn, call.id),
            toolCallId: call.id,
            signal: controller.signal,
            trace: callTrace(sessionId, fence.turn, call.id, stores.loop.get().trace),
          },
          host,
        );
      } finally {
        release();
      }
    };
    const concurrent = (call: ToolCall): boolean =>
      tools.find((t) => t.name === call.name)?.concurrent === true;
    // consecutive calls of concurrent tools run side by side; every result is recorded in call order
    const started = new Map<number, Promise<ToolOutcome>>();
    for (const [index, call] of calls.entries()) {
      if (!started.has(index) && concurrent(call)) {
        for (let next = index; next < calls.length && concurrent(calls[next]!); next++)
          started.set(next, run(calls[next]!));
      }
      const outcome = await (started.get(index) ?? run(call));
      if ("deferred" in outcome) continue;
      const appended = stores.transact(() => {
        if (!turns.current(fence)) return false;
        const done = turns.answerDeferred(
          fence.turn,
          call.id,
          call.name,
          outcome.content,
          outcome.isError === true,
          outcome.structured,
        );
        if (done && outcome.concludesTurn) this.#conclude(made.slice(made.indexOf(call) + 1), fence);
        return done && !outcome.concludesTurn;
      });
      if (!appended) return; // the turn moved on (interrupt or a concluding tool): later calls do not run
    }
  }

  /** A concluding tool (a structured-output capture) ends the turn; later calls are denied. */
  #conclude(later: readonly ToolCall[], fence: Fence): void {
    const { stores, turns } = this.#ports;
    for (const call of later) {
      turns.answerDeferred(
        fence.turn,
        call.id,
        call.name,
        [{ type: "text", text: "Error: denied: the turn already concluded" }],
        true,
      );
    }
    turns.end(stores.loop.get(), "completed");
  }
}
