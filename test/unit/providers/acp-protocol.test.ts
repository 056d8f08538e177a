import { describe, expect, it } from "vitest";
import { approvalScopesOf, permissionOptionFor, promptParams } from "../../../src/providers/acp-protocol";

describe("ACP session/prompt", () => {
  it("sends the prompt's text, and the span that started the run as _meta.traceparent when there is one", () => {
    const prompt = [
      { type: "text" as const, text: "first" },
      { type: "text" as const, text: "second" },
    ];
    expect(promptParams("s1", prompt)).toEqual({
      sessionId: "s1",
      prompt: [{ type: "text", text: "first\nsecond" }],
    });
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(promptParams("s1", prompt, traceparent)).toEqual({
      sessionId: "s1",
      prompt: [{ type: "text", text: "first\nsecond" }],
      _meta: { traceparent },
    });
  });
});

/** An agent's options, one per kind, each option's id its kind. */
const offering = (...kinds: string[]) => kinds.map((kind) => ({ optionId: kind, name: kind, kind }));

describe("ACP permission options a decision picks", () => {
  it("offers the scopes of the agent's allow options, once before always", () => {
    expect(approvalScopesOf(offering("allow_always", "allow_once", "reject_once"))).toEqual([
      "once",
      "always",
    ]);
    expect(approvalScopesOf(offering("allow_always", "reject_once"))).toEqual(["always"]);
    expect(approvalScopesOf(offering("allow_once"))).toEqual(["once"]);
    expect(approvalScopesOf(offering("reject_once", "reject_always"))).toEqual([]);
  });

  it.each([
    // approve: the allow option of exactly its scope, never a broader or narrower one
    [["allow_once", "allow_always"], "approve", "once", "allow_once"],
    [["allow_once", "allow_always"], "approve", "always", "allow_always"],
    [["allow_always", "reject_once"], "approve", "once", undefined],
    [["allow_once", "reject_once"], "approve", "always", undefined],
    // deny: the reject option of its scope, else the other one, else none (answered cancelled)
    [["reject_once", "reject_always"], "deny", "once", "reject_once"],
    [["reject_once", "reject_always"], "deny", "always", "reject_always"],
    [["allow_once", "reject_always"], "deny", "once", "reject_always"],
    [["allow_once", "reject_once"], "deny", "always", "reject_once"],
    [["allow_once", "allow_always"], "deny", "once", undefined],
  ] as const)("options %j, %s with scope %s: %s", (kinds, decision, scope, picked) => {
    expect(permissionOptionFor(offering(...kinds), decision, scope)).toBe(picked);
  });
});
