import { Role, type Task, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { textPart } from "../../../src/a2a/wire";
import { cardLocation, progressOf, runMessage } from "../../../src/providers/a2a-client";

/** The a2a provider's reading of tasks and URLs (src/providers/a2a-client.ts). */

function task(state: TaskState, said?: string, artifact?: string): Task {
  const message =
    said === undefined
      ? undefined
      : { ...runMessage("r", []), role: Role.ROLE_AGENT, parts: [textPart(said)] };
  return {
    id: "t",
    contextId: "c",
    status: { state, message, timestamp: undefined },
    artifacts:
      artifact === undefined
        ? []
        : [
            {
              artifactId: "a",
              name: "",
              description: "",
              parts: [textPart(artifact)],
              metadata: undefined,
              extensions: [],
            },
          ],
    history: [],
    metadata: undefined,
  };
}

describe("progressOf", () => {
  it("maps each task state to a run's progress or result (docs/semantics.md §12)", () => {
    expect(progressOf(task(TaskState.TASK_STATE_WORKING))).toEqual({ done: false });
    expect(progressOf(task(TaskState.TASK_STATE_SUBMITTED))).toEqual({ done: false });
    expect(progressOf(task(TaskState.TASK_STATE_COMPLETED, "hi"))).toEqual({
      done: true,
      result: { output: [{ type: "text", text: "hi" }], stopReason: "completed" },
    });
    // no status message: the artifacts' text is the output
    expect(progressOf(task(TaskState.TASK_STATE_COMPLETED, undefined, "from artifact"))).toMatchObject({
      result: { output: [{ type: "text", text: "from artifact" }] },
    });
    const stop = (state: TaskState) => {
      const p = progressOf(task(state, "why"));
      return p.done ? [p.result.stopReason, p.result.diagnostic] : undefined;
    };
    expect(stop(TaskState.TASK_STATE_FAILED)).toEqual(["error", "the A2A agent's task failed: why"]);
    expect(stop(TaskState.TASK_STATE_REJECTED)).toEqual(["error", "the A2A agent rejected the task: why"]);
    expect(stop(TaskState.TASK_STATE_CANCELED)).toEqual(["aborted", "the A2A agent canceled the task: why"]);
    expect(stop(TaskState.TASK_STATE_INPUT_REQUIRED)?.[1]).toMatch(/asked for more input/);
    expect(stop(TaskState.TASK_STATE_AUTH_REQUIRED)?.[1]).toMatch(/asked for authorization/);
    expect(stop(TaskState.TASK_STATE_UNSPECIFIED)?.[0]).toBe("error");
  });

  it("keeps the provider's token out of a diagnostic the agent's own words would carry", () => {
    const p = progressOf(task(TaskState.TASK_STATE_FAILED, "bad token secret-token-123 rejected"), [
      "secret-token-123",
    ]);
    expect(p.done && p.result.diagnostic).toBe("the A2A agent's task failed: bad token [redacted] rejected");
  });

  it("a direct message answer is a completed result", () => {
    const answer = { ...runMessage("r", []), role: Role.ROLE_AGENT, parts: [textPart("direct")] };
    expect(progressOf(answer)).toEqual({
      done: true,
      result: { output: [{ type: "text", text: "direct" }], stopReason: "completed" },
    });
  });
});

describe("cardLocation and runMessage", () => {
  it("takes a card URL as it is and finds the card of a base URL under it", () => {
    expect(cardLocation("https://a.example/agents/card.json")).toEqual({
      base: "https://a.example",
      path: "/agents/card.json",
    });
    expect(cardLocation("https://a.example/agents")).toEqual({
      base: "https://a.example",
      path: "/agents/.well-known/agent-card.json",
    });
    expect(cardLocation("https://a.example")).toEqual({
      base: "https://a.example",
      path: "/.well-known/agent-card.json",
    });
  });

  it("a run's message id is the run's, the same every time it is sent", () => {
    const prompt = [{ type: "text" as const, text: "x" }];
    expect(runMessage("run-1", prompt).messageId).toBe(runMessage("run-1", prompt).messageId);
    expect(runMessage("run-1", prompt).messageId).not.toBe(runMessage("run-2", prompt).messageId);
  });
});
