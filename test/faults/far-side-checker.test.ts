import { describe, expect, test } from "vitest";
import { found, World } from "./far-side-world";

/**
 * The far-side checker is not vacuous: a synthetic seed where every far operation went as
 * scripted passes it; each kind of damage a bug could do is reported; every excuse is granted
 * when its cause could have produced the outcome, and refused for a look-alike the cause did not
 * produce (a fault on another path, before or after the operation, on another operation's
 * request, a delay, a reset that never took effect).
 */

function clean(): World {
  const w = new World();
  w.start("remote", "f1-0");
  w.start("a2a", "f1-1");
  w.start("acp", "f1-2");
  w.mcp("f1-3");
  w.tool("f1-4");
  w.face("f1-5");
  return w;
}

describe("far-side checker: a clean seed", () => {
  test("passes, every far operation counted as expected", () => {
    const check = clean().check();
    expect(found(check)).toEqual([]);
    expect(check.answers).toEqual({ checked: 6, asExpected: 6, refused: {} });
    expect(check.far).toEqual({ operations: 6, acknowledged: 6, cutOff: {} });
  });
});

describe("far-side checker: planted damage is reported", () => {
  test("a far run answered twice", () => {
    const w = new World();
    w.start("remote", "f1-0", { ends: 2 });
    expect(found(w.check())).toEqual(["duplicated: run f1-0 has 2 subagent/end"]);
  });

  test("a far run that made two sessions on the far side", () => {
    const w = new World();
    w.start("a2a", "f1-0", { farSessions: 2 });
    expect(found(w.check())).toEqual([
      "duplicated: run f1-0 made 2 sessions on the far side",
      "duplicated: run f1-0's prompt reached the far side 2 times",
    ]);
  });

  test("a far run whose prompt reached its far session twice", () => {
    const w = new World();
    w.start("remote", "f1-0", { farPrompts: 2 });
    expect(found(w.check())).toEqual(["duplicated: run f1-0's prompt reached the far side 2 times"]);
  });

  test("an MCP call served twice by the server, or answered with text the server never served", () => {
    const twice = new World();
    twice.mcp("f1-0");
    twice.mcpServed = 2;
    expect(found(twice.check())).toEqual([
      "duplicated: the MCP server served 2 calls for 1 messages (1 allowed by resets)",
    ]);
    const never = new World();
    never.mcp("f1-0");
    never.mcpServed = 0;
    expect(found(never.check())).toEqual(["wrong: 1 calls answered with the MCP server's text, 0 served"]);
  });

  test("a far run answered with no far session behind it", () => {
    const w = new World();
    w.start("remote", "f1-0", { farSessions: 0 });
    expect(found(w.check())).toEqual([
      'wrong: run f1-0 (remote) ended completed with "echo: far f1-0" but no far session took its prompt',
    ]);
  });

  test("a wrong remote result, even with a fault on its path while it ran", () => {
    const w = new World();
    const op = w.start("remote", "f1-0", { text: "echo: far f1-9" });
    w.fault("remote-call", "down", { at: op.start + 10 });
    expect(found(w.check())).toEqual(['wrong: run f1-0 (remote) ended completed with "echo: far f1-9": x']);
  });

  test("an MCP answer swapped between two calls", () => {
    const w = new World();
    w.mcp("f1-0", { text: "MCP F1-1" });
    w.mcp("f1-1", { text: "MCP F1-0" });
    expect(found(w.check())).toEqual([
      'wrong: MCP call of f1-0 answered "MCP F1-1"',
      'wrong: MCP call of f1-1 answered "MCP F1-0"',
    ]);
  });

  test("a user tool called twice: two results in its turn, or two calls by the model", () => {
    const twice = new World();
    twice.tool("f1-0", { results: 2 });
    expect(found(twice.check())).toEqual([
      'duplicated: far-tool f1-0: its far_tool call answered 2 times ["tool f1-0","tool f1-0"]',
    ]);
    const called = new World();
    called.tool("f1-0", { calls: 2 });
    expect(found(called.check())).toEqual(["duplicated: far-tool f1-0: far_tool called 2 times"]);
  });

  test("a face call answered with another child's text, or its child ended twice", () => {
    const w = new World();
    w.face("f1-0", { text: "echo: face f1-1" });
    expect(found(w.check())).toEqual(['wrong: face call f1-0 answered "echo: face f1-1" (1 ends)']);
    const twice = new World();
    twice.face("f1-0");
    twice.event("subagent/end", {
      runId: "x",
      lastAssistantMessage: [{ type: "text", text: "echo: face f1-0" }],
    });
    expect(found(twice.check())).toContain("duplicated: face call f1-0: its child ended 2 times");
  });

  test("a start or message the session refused, with no fault on any path that reaches it", () => {
    const w = new World();
    const op = w.start("remote", "f1-0");
    op.outcome = "ambiguous";
    op.status = 500;
    op.code = "INTERNAL";
    expect(found(w.check())).toEqual(["unexpected: far-start f1-0 answered 500 INTERNAL"]);
  });

  test("anything left owed, and a gap in the log", () => {
    const w = clean();
    w.owed.push("outbox o1");
    w.log.splice(2, 1);
    expect(found(w.check())).toContain("stuck: outbox o1 is still owed");
    expect(found(w.check())).toContain("seq-gaps: event 3 at position 2");
  });
});

describe("far-side checker: a far run ended error", () => {
  /** A remote run that ended error, a fault placed by `plant` relative to the run's op. */
  function errored(plant: (w: World, run: { start: number; end: number }) => void) {
    const w = new World();
    const op = w.start("remote", "f1-0", { stopReason: "error", ms: 100 });
    // another run whose tag has this one's as its prefix
    w.start("remote", "f1-01");
    plant(w, { start: op.start, end: op.start + 101 });
    return w.check();
  }
  const wrong = 'wrong: run f1-0 (remote) ended error with "": x';

  test("is explained by a fault on its own path while it ran (on its own request or one naming no run)", () => {
    for (const detail of [
      "POST /v1/sessions far f1-0",
      "POST /v1/callbacks/p/run-f1-0",
      "GET /v1/sessions/remote-f1-0",
    ]) {
      const check = errored((w, run) => w.fault("callback", "lose-answer", { at: run.start + 50, detail }));
      expect(found(check), detail).toEqual([]);
      expect(check.answers.refused).toEqual({ "far run ended error: net-lose-answer at callback": 1 });
    }
    expect(
      found(errored((w, run) => w.fault("remote-call", "down", { at: run.end, detail: "GET /" }))),
    ).toEqual([]);
  });

  test("is not explained by a fault on another path, before it, after it, on another run's request, or a delay", () => {
    expect(found(errored((w, run) => w.fault("a2a-call", "down", { at: run.start + 50 })))).toEqual([wrong]);
    expect(found(errored((w, run) => w.fault("remote-call", "down", { at: run.start - 1 })))).toEqual([
      wrong,
    ]);
    expect(found(errored((w, run) => w.fault("remote-call", "down", { at: run.end + 1 })))).toEqual([wrong]);
    const other = (w: World, run: { start: number }) =>
      w.fault("callback", "down", { at: run.start + 50, detail: "POST /v1/callbacks/p/run-f1-01" });
    expect(found(errored(other))).toEqual([wrong]);
    // a request naming run f1-01 does not name run f1-0
    const prefixed = (w: World, run: { start: number }) =>
      w.fault("remote-call", "down", { at: run.start + 50, detail: "POST /v1/sessions far f1-01" });
    expect(found(errored(prefixed))).toEqual([wrong]);
    expect(found(errored((w, run) => w.fault("remote-call", "delay", { at: run.start + 50 })))).toEqual([
      wrong,
    ]);
  });

  test("is not explained by a reset for a remote run (its transport outlives the object)", () => {
    expect(found(errored((w, run) => w.abort(run.start + 50)))).toEqual([wrong]);
  });

  test("of an ACP run is explained by a reset that took effect while it ran, not by one that did not", () => {
    const acp = (plant: (w: World, start: number) => void) => {
      const w = new World();
      const op = w.start("acp", "f1-0", { stopReason: "error", ms: 100 });
      plant(w, op.start);
      return w.check();
    };
    const acpWrong = ['wrong: run f1-0 (acp) ended error with "": x'];
    const aborted = acp((w, start) => w.abort(start + 50));
    expect(found(aborted)).toEqual([]);
    expect(aborted.answers.refused).toEqual({ "far run ended error: reset of its session: abort": 1 });
    expect(found(acp((w, start) => w.evict(start + 50, "evicted")))).toEqual([]);
    expect(found(acp((w, start) => w.evict(start + 50, "not-running")))).toEqual(acpWrong);
    expect(found(acp((w, start) => w.abort(start + 50, false)))).toEqual(acpWrong);
    expect(found(acp((w, start) => w.abort(start + 200)))).toEqual(acpWrong);
    expect(found(acp((w, start) => w.abort(start - 5)))).toEqual(acpWrong);
    expect(
      found(acp((w, start) => w.fault("acp-connect", "overloaded", { at: start + 20, detail: "GET /acp" }))),
    ).toEqual([]);
  });
});

describe("far-side checker: an MCP call answered with an error", () => {
  test("is explained by a fault on the MCP path during that call, on its own request or one naming no call", () => {
    const w = new World();
    const op = w.mcp("f1-0", { isError: true, text: "Error: network connection lost" });
    w.fault("mcp-call", "lose-answer", {
      at: op.start + 20,
      detail: 'POST /mcp {"arguments":{"text":"mcp f1-0"}}',
    });
    w.mcp("f1-1", { isError: true, text: "Error: unreachable" });
    w.fault("mcp-call", "down", { at: w.now - 10 });
    const check = w.check();
    expect(found(check)).toEqual([]);
    expect(check.answers.refused).toEqual({
      "MCP call error: net-lose-answer at mcp-call": 1,
      "MCP call error: net-down at mcp-call": 1,
    });
  });

  test("is not explained by an error and a fault that belong to another call, or a fault after its answer", () => {
    const w = new World();
    // call f1-0 errs while the fault that fired during it hit call f1-1's request
    const a = w.mcp("f1-0", { isError: true, text: "Error: boom", ms: 50 });
    w.fault("mcp-call", "down", { at: a.start + 20, detail: 'POST /mcp {"arguments":{"text":"mcp f1-1"}}' });
    // call f1-1 was sent with f1-0, and waited for f1-0's turn
    const b = w.mcp("f1-1", { isError: true, text: "Error: lost" });
    b.start = a.start;
    const late = w.mcp("f1-2", { isError: true, text: "Error: late" });
    w.fault("mcp-call", "down", { at: w.now + 5 });
    w.fault("mcp-face", "down", { at: late.start + 5 });
    expect(found(w.check())).toEqual([
      'wrong: MCP call of f1-0 answered "Error: boom"',
      'wrong: MCP call of f1-2 answered "Error: late"',
    ]);
    expect(w.check().answers.refused).toEqual({ "MCP call error: net-down at mcp-call": 1 });
  });
});

describe("far-side checker: an MCP call run again after a restart", () => {
  /** One MCP message served twice, with `plant` placing resets around its call. */
  function servedTwice(plant: (w: World, start: number) => void): string[] {
    const w = new World();
    const op = w.mcp("f1-0", { ms: 100 });
    w.mcp("f1-1");
    w.mcpServed = 3;
    plant(w, op.start);
    return found(w.check());
  }
  const duplicated = "duplicated: the MCP server served 3 calls for 2 messages (2 allowed by resets)";

  test("is explained by a reset that took effect during its turn", () => {
    expect(servedTwice((w, start) => w.abort(start + 50))).toEqual([]);
    expect(servedTwice((w, start) => w.evict(start + 50, "evicted"))).toEqual([]);
  });

  test("is not explained by a reset that did not take effect, or took effect after its turn", () => {
    expect(servedTwice((w, start) => w.evict(start + 50, "not-running"))).toEqual([duplicated]);
    expect(servedTwice((w, start) => w.abort(start + 50, false))).toEqual([duplicated]);
    expect(servedTwice((w) => w.abort(w.now + 10))).toEqual([duplicated]);
  });
});

describe("far-side checker: a user tool cut short by restarts", () => {
  const refusal = "Error: the call was cut short by a restart of the session 3 times; it is not run again";

  test("is explained by three resets that took effect during its call", () => {
    const w = new World();
    const op = w.tool("f1-0", { text: refusal, ms: 100 });
    for (const at of [10, 40, 70]) w.abort(op.start + at);
    const check = w.check();
    expect(found(check)).toEqual([]);
    expect(check.answers.refused).toEqual({ "user tool cut short by resets: abort": 1 });
  });

  test("is not explained by fewer effective resets, or by evictions of an instance not running", () => {
    const w = new World();
    const op = w.tool("f1-0", { text: refusal, ms: 100 });
    w.abort(op.start + 10);
    w.evict(op.start + 40, "not-running");
    w.evict(op.start + 70, "not-running");
    w.abort(op.start + 500);
    expect(found(w.check())).toEqual([`wrong: tool f1-0 (answer) answered ${JSON.stringify(refusal)}`]);
  });
});

describe("far-side checker: a call on the MCP face", () => {
  test("cut off is explained by a fault on the face's path during the call, counted by cause", () => {
    const w = new World();
    const op = w.face("f1-0", { outcome: "fail" });
    w.fault("mcp-face", "overloaded", { at: op.start + 10 });
    const check = w.check();
    expect(found(check)).toEqual([]);
    expect(check.far).toEqual({
      operations: 1,
      acknowledged: 0,
      cutOff: { "far-face cut off: net-overloaded at mcp-face": 1 },
    });
    expect(check.answers.refused).toEqual({ "far-face cut off: net-overloaded at mcp-face": 1 });
  });

  test("cut off with no fault on its path during the call is a violation", () => {
    const w = new World();
    const op = w.face("f1-0", { outcome: "fail" });
    w.fault("mcp-call", "down", { at: op.start + 10 });
    w.fault("mcp-face", "down", { at: op.end + 1 });
    expect(found(w.check())).toEqual([
      "unexpected: face call f1-0 failed with no fault on its path: TypeError: Network connection lost.",
    ]);
  });

  test("answered with an error is explained by a reset that took effect during it, not by one that did not", () => {
    const reset = (took: boolean) => {
      const w = new World();
      const op = w.face("f1-0", { isError: true, text: "session restarted" });
      w.abort(op.start + 10, took);
      return w.check();
    };
    expect(found(reset(true))).toEqual([]);
    expect(found(reset(false))).toEqual(['wrong: face call f1-0 answered "session restarted" (1 ends)']);
  });
});
