import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  expectNoSession,
  startOneShot,
  startRun,
  TENANT_ADMIN,
  waitForRun,
} from "../../support/api";
import { reservedId } from "../../support/ids";
import { allEvents, toolResults } from "../../support/logs";
import { dumpTables, hashOf } from "../../support/objects";
import { script } from "../../support/scripts";
import { loadPatternEngine } from "../../../src/core/linear-pattern";

/**
 * An `outputSchema`'s `pattern` is caller-supplied code run in the child's object
 * (README, Security and limits: "What a caller can make the runtime compute"): it is compiled
 * when the start is received, an invalid one or one the linear-time engine cannot run is
 * `400 INVALID_SCHEMA` with nothing stored, and a model's answer is matched in linear time, so a
 * catastrophic pattern cannot hold the thread that other tenants' requests run on.
 */

/** Exponential for a backtracking engine: every split of the run of `a`s is tried before `!` fails it. */
const CATASTROPHIC = "^(a+)+$";
/** 33 `a`s: tens of seconds for a JS RegExp (about 4 s at 30, doubling with each `a`). */
const EVIL = `${"a".repeat(33)}!`;
/** Far above any answer here (milliseconds) and far below the backtracking match. */
const OUTER_BOUND_MS = 10_000;

function schemaWith(pattern: string): Record<string, unknown> {
  return { type: "object", properties: { s: { type: "string", pattern } }, required: ["s"] };
}

describe("outputSchema patterns (security: what a caller can make the runtime compute)", () => {
  it("a catastrophic pattern against a 34-character answer: another tenant's requests are answered all along, and the child's answer fails the schema", async () => {
    const parent = await createSession();
    const created = await api("POST", "/v1/sessions", { token: TENANT_ADMIN, body: {} });
    expect(created.status).toBe(201);
    const neighbour: string = created.body.id;

    // The engine loaded first, as a deployed Worker has it (its `import()` is served from the
    // upload, with no I/O): the test pool serves an `import()` over a socket, which the loop of
    // requests below would starve.
    await loadPatternEngine();

    // The child, from its start to its settled result. All objects share this thread (workerd),
    // so while a match runs, no other request can be answered.
    let childDone = false;
    const child = (async () => {
      try {
        const started = await startOneShot(parent.id, {
          outputSchema: schemaWith(CATASTROPHIC),
          prompt: script({ call: [{ tool: "structured_output", args: { s: EVIL } }] }, { say: "gave up" }),
        });
        return { started, run: await waitForRun(parent.id, started.runId, OUTER_BOUND_MS) };
      } finally {
        childDone = true;
      }
    })();

    // The other tenant asks for its own session, one request after the other, for as long as the
    // child lives: whenever the child's match runs, one of these requests is waiting for it.
    const latencies: number[] = [];
    while (!childDone) {
      const askedAt = Date.now();
      const answer = await api("GET", `/v1/sessions/${neighbour}`, { token: TENANT_ADMIN });
      latencies.push(Date.now() - askedAt);
      expect(answer.status).toBe(200);
      expect(answer.body.id).toBe(neighbour);
    }
    const { started, run } = await child;

    expect(latencies.length).toBeGreaterThan(0);
    expect(Math.max(...latencies)).toBeLessThan(OUTER_BOUND_MS);
    // the answer was checked and refused: no match, so no structured result
    expect(run.result).toMatchObject({ output: [{ type: "text", text: "gave up" }], stopReason: "error" });
    expect(run.result).not.toHaveProperty("structured");
    const [capture] = toolResults(await allEvents(started.id), "structured_output");
    expect(capture!.isError).toBe(true);
    expect(capture!.text).toContain(CATASTROPHIC);
  });

  it("ordinary patterns keep working: a matching answer is captured, a non-matching one is an error result the model can retry", async () => {
    const parent = await createSession();
    const started = await startOneShot(parent.id, {
      outputSchema: schemaWith("^[A-Z]{2}-\\d{3}$"),
      prompt: script(
        { call: [{ tool: "structured_output", args: { s: "AB-12" } }] },
        { call: [{ tool: "structured_output", args: { s: "AB-123" } }] },
      ),
    });
    expect((await waitForRun(parent.id, started.runId)).result).toEqual({
      output: [],
      structured: { s: "AB-123" },
      stopReason: "completed",
    });
    expect(toolResults(await allEvents(started.id), "structured_output").map((r) => r.isError)).toEqual([
      true,
      false,
    ]);
  });

  it.each([
    ["an invalid pattern", "(unclosed", /not a valid regular expression/],
    ["a backreference", "^(a)\\1$", /backreferences and lookaround/],
    ["a lookahead", "^(?=a)a$", /backreferences and lookaround/],
    ["a lookbehind", "(?<!a)b", /backreferences and lookaround/],
    ["a pattern whose repetitions expand past the size limit", "(?:a{100}){10}b{100}", /expands to/],
  ])("%s: 400 INVALID_SCHEMA at the start, nothing stored", async (_name, pattern, message) => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const before = await hashOf(await dumpTables(parent.id));
    const refused = await startRun(parent.id, {
      childId,
      prompt: "never run",
      outputSchema: { type: "object", properties: { nested: schemaWith(pattern) } },
    });
    expectError(refused, 400, "INVALID_SCHEMA", message);
    expect(refused.body.error.message).toContain("outputSchema.properties.nested.properties.s.pattern");
    expect(await hashOf(await dumpTables(parent.id))).toBe(before);
    expect(await dumpTables(reservedId(parent.id, childId))).toEqual({});
    await expectNoSession(reservedId(parent.id, childId));
  });
});
