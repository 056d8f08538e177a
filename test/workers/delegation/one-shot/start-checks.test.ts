import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  expectNoSession,
  putProvider,
  rawBody,
  rpc,
  rpcFailure,
  startOneShot,
  startRun,
  uniqueName,
  UUID,
  view,
  waitForRun,
} from "../../../support/api";
import { faults } from "../../../support/faults";
import { occupy, reservedId } from "../../../support/ids";
import {
  allEvents,
  assistantTexts,
  lifecycleEvents,
  ofType,
  sleep,
  waitForChild,
  waitForEvents,
} from "../../../support/logs";
import { quiesce, sqlRows, stub } from "../../../support/objects";
import { script } from "../../../support/scripts";

/**
 * The checks a one-shot start passes before anything is stored (semantics.md §5.1), first miss
 * wins: unknown provider, capabilities, `maxDepth` form, `outputSchema`, then depth (§8); and a
 * refused start leaves no run, child, outbox row or lifecycle event. Provider names are global to
 * this file's storage, so every test registers its own unique names.
 */

/** Sends a raw JSON text as the start body (for values only the raw text can carry, like -0). */
function startRaw(parent: string, raw: string) {
  return api("POST", `/v1/sessions/${parent}/subagents`, rawBody(raw));
}

/** The parent holds no trace of a delegation: no run, no owned child, no outbox row, no lifecycle event. */
async function expectNoDelegation(parent: string): Promise<void> {
  expect(await sqlRows(parent, "SELECT run_id FROM runs")).toEqual([]);
  expect(await sqlRows(parent, "SELECT child_id FROM children")).toEqual([]);
  expect(await sqlRows(parent, "SELECT id FROM outbox")).toEqual([]);
  expect(lifecycleEvents(await allEvents(parent))).toEqual([]);
}

describe("one-shot start checks, in order (semantics.md §5.1)", () => {
  it("a start naming an unknown provider answers 404 NO_PROVIDER, and a start issued after the provider was deleted does the same and creates no session", async () => {
    const parent = await createSession();
    const ghost = crypto.randomUUID();
    expectError(
      await startRun(parent.id, { provider: uniqueName("nope"), prompt: "x", childId: ghost }),
      404,
      "NO_PROVIDER",
    );
    // NO_PROVIDER is checked before anything else, even with options no provider could serve
    expectError(
      await startRun(parent.id, { provider: uniqueName("nope"), prompt: "x", maxDepth: -1, persona: "p" }),
      404,
      "NO_PROVIDER",
    );
    await expectNoSession(ghost);
    await expectNoDelegation(parent.id);

    const name = uniqueName("gone");
    expect((await putProvider(name, { kind: "spawn" })).status).toBe(201);
    const first = await startRun(parent.id, { provider: name, prompt: "before removal" });
    expect(first.status).toBe(201);
    expect((await api("DELETE", `/v1/providers/${name}`)).status).toBe(204);

    const late = crypto.randomUUID();
    expectError(
      await startRun(parent.id, { provider: name, prompt: "after removal", childId: late }),
      404,
      "NO_PROVIDER",
    );
    await expectNoSession(late);
    expect((await sqlRows(parent.id, "SELECT child_id FROM children")).map((r) => r.child_id)).toEqual([
      first.body.id,
    ]);
    expect((await sqlRows(parent.id, "SELECT run_id FROM runs")).map((r) => r.run_id)).toEqual([
      first.body.runId,
    ]);
    await waitForRun(parent.id, first.body.runId);
    expect(
      lifecycleEvents(await allEvents(parent.id)).filter((e) => e.type === "subagent/start"),
    ).toHaveLength(1);

    // a start that interleaves with the removal either wins cleanly or leaves no trace
    const racedName = uniqueName("racy");
    expect((await putProvider(racedName, { kind: "spawn" })).status).toBe(201);
    const racer = await createSession();
    const childId = crypto.randomUUID();
    const [startAnswer, removal] = await Promise.all([
      startRun(racer.id, { provider: racedName, prompt: "race", childId }),
      api("DELETE", `/v1/providers/${racedName}`),
    ]);
    expect(removal.status).toBe(204);
    if (startAnswer.status === 201) {
      expect((await waitForRun(racer.id, startAnswer.body.runId)).result.stopReason).toBe("completed");
    } else {
      expectError(startAnswer, 404, "NO_PROVIDER");
      await expectNoSession(reservedId(racer.id, childId));
      await expectNoDelegation(racer.id);
    }
  });

  it("a provider without capabilities refuses maxDepth, outputSchema, toolFilter and persona with 422 UNSUPPORTED_CAPABILITY, first miss in the documented order, before any child exists", async () => {
    const parent = await createSession();
    const remote = uniqueName("remote");
    // .invalid never resolves: the one start below that is published reaches no real host
    expect(
      (await putProvider(remote, { kind: "remote", url: "https://remote.example.invalid" })).status,
    ).toBe(201);
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const cases: [Record<string, unknown>, string][] = [
      [{ maxDepth: 2 }, "maxDepth"],
      [{ outputSchema: schema }, "outputSchema"],
      [{ toolFilter: { deny: ["echo"] } }, "toolFilter"],
      [{ persona: "a pirate" }, "persona"],
      // first miss wins, in the order outputSchema, maxDepth, toolFilter, persona
      [{ persona: "p", toolFilter: { allow: ["echo"] }, maxDepth: 1, outputSchema: schema }, "outputSchema"],
      [{ persona: "p", toolFilter: { allow: ["echo"] }, maxDepth: 1 }, "maxDepth"],
      [{ persona: "p", toolFilter: { allow: ["echo"] } }, "toolFilter"],
      // the capability check precedes the form checks of the same options
      [{ maxDepth: -1 }, "maxDepth"],
      [{ outputSchema: { type: "string" } }, "outputSchema"],
    ];
    for (const [options, option] of cases) {
      const childId = crypto.randomUUID();
      const res = await startRun(parent.id, { provider: remote, prompt: "x", childId, ...options });
      expectError(res, 422, "UNSUPPORTED_CAPABILITY");
      expect(res.body.error.message).toContain(option);
      await expectNoSession(reservedId(parent.id, childId));
    }
    await expectNoDelegation(parent.id);
    // with no options a remote start is published (the transport is tested in remote-*.test.ts)
    const plain = await startRun(parent.id, { provider: remote, prompt: "x" });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({ id: `remote:${plain.body.runId}`, local: false });
    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${plain.body.runId}`)).status).toBe(202);
  });

  it('maxDepth forms -1, 1.5, "3", -0, NaN, ±Infinity, null and 2^53 are refused with INVALID_MAX_DEPTH (HTTP 400 and RPC) before any child exists; absent and MAX_SAFE_INTEGER are accepted', async () => {
    const parent = await createSession();
    const raws = [
      "-1",
      "1.5",
      '"3"',
      "-0",
      "9007199254740992",
      "1e400",
      "-1e400",
      "null",
      "true",
      "[1]",
      "{}",
    ];
    for (const value of raws) {
      const childId = crypto.randomUUID();
      const res = await startRaw(
        parent.id,
        `{"provider":"spawn","prompt":"x","mode":"one-shot","childId":"${childId}","maxDepth":${value}}`,
      );
      expectError(res, 400, "INVALID_MAX_DEPTH");
      expect(res.body.error.message).toBe("subagent maxDepth must be a non-negative safe integer");
      await expectNoSession(reservedId(parent.id, childId));
    }
    // values JSON cannot carry reach the RPC entrypoint intact: NaN, ±Infinity, -0, 2^53, a BigInt
    for (const maxDepth of [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      -0,
      2 ** 53,
      2.5,
      3n,
    ]) {
      const childId = crypto.randomUUID();
      const message = await rpcFailure(() =>
        rpc.start(parent.id, { provider: "spawn", prompt: "x", childId, maxDepth }),
      );
      expect(message).toBe("INVALID_MAX_DEPTH: subagent maxDepth must be a non-negative safe integer");
      await expectNoSession(reservedId(parent.id, childId));
    }
    await expectNoDelegation(parent.id);

    const absent = await startRun(parent.id, { provider: "spawn", prompt: "no cap" });
    expect(absent.status).toBe(201);
    const largest = await startRaw(
      parent.id,
      '{"provider":"spawn","prompt":"largest cap","mode":"one-shot","maxDepth":9007199254740991}',
    );
    expect(largest.status).toBe(201);
    for (const started of [absent, largest]) {
      expect((await waitForRun(parent.id, started.body.runId)).result.stopReason).toBe("completed");
    }
  });

  it("an outputSchema that is not object-rooted, uses unsupported keywords or non-JSON values answers 400 INVALID_SCHEMA before any child exists", async () => {
    const parent = await createSession();
    const bad: string[] = [
      '{"type":"string"}',
      "[]",
      '"object"',
      "{}",
      '{"properties":{"a":{"type":"string"}}}',
      '{"type":["object","null"]}',
      '{"type":"object","oneOf":[{"type":"object"}]}',
      '{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}',
      '{"type":"object","properties":{"a":{"$ref":"#"}}}',
      '{"type":"object","items":{"type":"string","allOf":[]}}',
      '{"type":"object","description":1e400}',
      '{"type":"object","properties":{"a":{"type":"number","maximum":-1e400}}}',
      '{"type":"object","properties":{"a":{"type":"strung"}}}',
      '{"type":"object","required":[1]}',
    ];
    for (const schema of bad) {
      const childId = crypto.randomUUID();
      const res = await startRaw(
        parent.id,
        `{"provider":"spawn","prompt":"x","mode":"one-shot","childId":"${childId}","outputSchema":${schema}}`,
      );
      expectError(res, 400, "INVALID_SCHEMA");
      expect(res.body.error.message).toMatch(/^unsupported JSON schema/);
      await expectNoSession(reservedId(parent.id, childId));
    }
    // non-JSON annotation values that only the RPC entrypoint can carry
    const nonJson: Record<string, unknown>[] = [
      { type: "object", default: Number.NaN },
      { type: "object", title: undefined },
      { type: "object", properties: { at: { type: "string", default: new Date(0) } } },
      { type: "object", properties: { n: { type: "integer", maximum: 10n } } },
    ];
    for (const outputSchema of nonJson) {
      const childId = crypto.randomUUID();
      const message = await rpcFailure(() =>
        rpc.start(parent.id, { provider: "spawn", prompt: "x", childId, outputSchema }),
      );
      expect(message).toMatch(/^INVALID_SCHEMA: unsupported JSON schema/);
      await expectNoSession(reservedId(parent.id, childId));
    }
    // maxDepth's form is checked before the schema
    expectError(
      await startRun(parent.id, {
        provider: "spawn",
        prompt: "x",
        maxDepth: -1,
        outputSchema: { type: "string" },
      }),
      400,
      "INVALID_MAX_DEPTH",
    );
    await expectNoDelegation(parent.id);

    const good = await startRun(parent.id, {
      provider: "spawn",
      prompt: script({ call: [{ tool: "structured_output", args: { n: 1 } }] }),
      outputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
    });
    expect(good.status).toBe(201);
    expect((await waitForRun(parent.id, good.body.runId)).result).toEqual({
      output: [],
      structured: { n: 1 },
      stopReason: "completed",
    });
  });
});

describe("a refused start leaves nothing behind (semantics.md §5.1, §10.4)", () => {
  it("a start the child refuses produces no subagent/start and no subagent/end and leaves no run behind", async () => {
    const parent = await createSession();
    const owner = await createSession();
    const childId = crypto.randomUUID();
    // a session of another parent already on the id this start places its child on: its object
    // refuses a second init
    const stranger = reservedId(parent.id, childId);
    await occupy(stranger, owner.id);
    await waitForEvents(stranger, (es) => es.some((e) => e.type === "turn/end"));
    await quiesce([stranger]);
    const strangerBefore = await allEvents(stranger);
    const strangerView = (await api("GET", `/v1/sessions/${stranger}`)).body;

    const refused = await startRun(parent.id, { provider: "spawn", prompt: "take over", childId });
    expectError(refused, 409, "DUPLICATE_CHILD");
    await sleep(100);
    await expectNoDelegation(parent.id);
    // the refusing session is unchanged
    expect(await allEvents(stranger)).toEqual(strangerBefore);
    expect((await api("GET", `/v1/sessions/${stranger}`)).body).toEqual(strangerView);

    // refusals for depth and capability leave nothing either
    const remote = uniqueName("refuse");
    expect((await putProvider(remote, { kind: "remote", url: "https://example.com" })).status).toBe(201);
    expectError(
      await startRun(parent.id, { provider: remote, prompt: "x", persona: "p" }),
      422,
      "UNSUPPORTED_CAPABILITY",
    );
    expectError(
      await startRun(parent.id, { provider: "spawn", prompt: "x", maxDepth: 0 }),
      422,
      "DEPTH_EXCEEDED",
    );
    await expectNoDelegation(parent.id);

    // and the parent still delegates normally afterwards: exactly one pair
    const ok = await startRun(parent.id, { provider: "spawn", prompt: "fine" });
    expect(ok.status).toBe(201);
    await waitForRun(parent.id, ok.body.runId);
    const log = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    expect(lifecycleEvents(log).map((e) => [e.type, e.data.runId])).toEqual([
      ["subagent/start", ok.body.runId],
      ["subagent/end", ok.body.runId],
    ]);
  });

  // A regression test: a start that answered 503 used to be published later by an unrelated wake-up.
  it("a start whose child cannot be created (its init keeps crashing) and that answers an error never publishes a run later: no subagent/start, no subagent/end, no child, nothing pending", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    let crashing = true;
    const plan = faults(reservedId(parent.id, childId), (point) => {
      if (point === "in-init" && crashing) throw new Error("child object crashed during init");
    });
    try {
      const answer = await startRun(parent.id, { provider: "spawn", prompt: "orphan?", childId });
      crashing = false; // the child's object recovers
      if (answer.status >= 400) {
        // the caller was told the start failed and got no runId: nothing may ever be published for it
        expect((await api("GET", `/v1/sessions/${parent.id}`)).body.status).toBe("idle");
        expect(
          (await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content: "wake up" } })).status,
        ).toBe(202);
        await waitForEvents(parent.id, (es) => es.some((e) => e.type === "turn/end"));
        await sleep(500);
        expect(lifecycleEvents(await allEvents(parent.id))).toEqual([]);
        await expectNoSession(reservedId(parent.id, childId));
        // only the attempt held for a retry of the same request (it is never published by itself)
        expect(await sqlRows(parent.id, "SELECT state, held_until IS NOT NULL AS held FROM runs")).toEqual([
          { state: "starting", held: 1 },
        ]);
      } else {
        // or the start was accepted with a runId the caller can follow
        expect(answer.body.runId).toMatch(UUID);
        expect((await waitForRun(parent.id, answer.body.runId)).result.stopReason).toBe("completed");
      }
    } finally {
      plan.remove();
    }
  });
});

describe("delegation depth (semantics.md §8)", () => {
  it("with parent depth 0 and maxDepth 0 a start answers 422 'subagent depth 1 exceeds maxDepth 0' and no child remains; caps apply at every depth, the deployment's included", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const refused = await startRun(parent.id, { provider: "spawn", prompt: "x", maxDepth: 0, childId });
    expectError(refused, 422, "DEPTH_EXCEEDED");
    expect(refused.body.error.message).toBe("subagent depth 1 exceeds maxDepth 0");
    await expectNoSession(reservedId(parent.id, childId));
    expect(await sqlRows(parent.id, "SELECT run_id FROM runs")).toEqual([]);
    expect(await sqlRows(parent.id, "SELECT child_id FROM children")).toEqual([]);
    expect(ofType(await allEvents(parent.id), "subagent/start")).toEqual([]);
    // the fork provider applies the same rule
    expectError(
      await startRun(parent.id, { provider: "fork", prompt: "x", maxDepth: 0 }),
      422,
      "DEPTH_EXCEEDED",
    );

    // a chain down to the deployment cap (MAX_DEPTH_CAP = 5): each link is one deeper
    let at = parent.id;
    for (let depth = 1; depth <= 5; depth++) {
      const link = await startOneShot(at, { provider: "spawn", prompt: `depth ${depth}`, maxDepth: depth });
      expect((await view(link.id)).delegationDepth).toBe(depth);
      if (depth === 1) {
        const tooDeep = await startRun(link.id, { provider: "spawn", prompt: "x", maxDepth: 1 });
        expectError(tooDeep, 422, "DEPTH_EXCEEDED");
        expect(tooDeep.body.error.message).toBe("subagent depth 2 exceeds maxDepth 1");
      }
      at = link.id;
    }
    const beyondCap = crypto.randomUUID();
    const capped = await startRun(at, { provider: "spawn", prompt: "x", maxDepth: 100, childId: beyondCap });
    expectError(capped, 422, "DEPTH_EXCEEDED");
    expect(capped.body.error.message).toBe("subagent depth 6 exceeds maxDepth 5");
    await expectNoSession(reservedId(at, beyondCap));
  });

  it("depth comes from the durable header: a depth-2 child evicted mid-turn delegates at depth 3 from a fresh instance, and the tool's default cap of 3 then refuses depth 4", async () => {
    const root = await createSession();
    const child = await startOneShot(root.id, { provider: "spawn", prompt: "one" });
    await waitForRun(root.id, child.runId);
    const greatGrandScript = script(
      {
        call: [
          { tool: "subagent", args: { description: "too deep", prompt: "x", run_in_background: false } },
        ],
      },
      { say: "great-grandchild done" },
    );
    const grand = await startOneShot(child.id, {
      provider: "spawn",
      prompt: script(
        { think: 400 },
        {
          call: [
            {
              tool: "subagent",
              args: { description: "deeper", prompt: greatGrandScript, run_in_background: false },
            },
          ],
        },
        { say: "grandchild done" },
      ),
    });
    expect((await view(grand.id)).delegationDepth).toBe(2);

    // evict the grandchild while its first step is in flight: a new instance re-runs the step
    await waitForEvents(grand.id, (es) => ofType(es, "turn/start").length === 1);
    await evictDurableObject(stub(grand.id));
    await runDurableObjectAlarm(stub(grand.id));

    const result = await waitForRun(child.id, grand.runId);
    expect(result.result).toEqual({
      output: [{ type: "text", text: "grandchild done" }],
      stopReason: "completed",
    });
    const greatGrand = await waitForChild(grand.id);
    expect(await view(greatGrand)).toMatchObject({
      parentSession: grand.id,
      origin: "subagent",
      delegationDepth: 3,
    });
    expect(ofType(await allEvents(grand.id), "subagent/start")).toHaveLength(1);

    const deepLog = await allEvents(greatGrand);
    const refusal = ofType(deepLog, "tool/result")[0]!.data;
    expect(refusal.isError).toBe(true);
    expect(refusal.content[0].text).toContain("subagent depth 4 exceeds maxDepth 3");
    expect(ofType(deepLog, "subagent/start")).toEqual([]);
    expect(assistantTexts(deepLog).at(-1)).toBe("great-grandchild done");

    // over HTTP the header's depth is the floor as well
    const capped = await startRun(greatGrand, { provider: "spawn", prompt: "x", maxDepth: 3 });
    expectError(capped, 422, "DEPTH_EXCEEDED");
    expect(capped.body.error.message).toBe("subagent depth 4 exceeds maxDepth 3");
  });
});
