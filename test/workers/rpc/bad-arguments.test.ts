import { beforeAll, describe, expect, it } from "vitest";
import { rpc, rpcFailure } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";
import { dumpTables, hashOf, registryStub, tablesHash } from "../../support/objects";

/**
 * Bad arguments to every method of the RPC entrypoint that takes any (`providers()` takes none):
 * each is refused with a stable code at the start of its message (RPC keeps only the message)
 * and changes nothing: the parent's and its child's tables and the registry's hash the same
 * before and after.
 */

const GHOST = "00000000-0000-4000-8000-000000000000";
let parent = "";
let child = "";

interface Case {
  name: string;
  code: RegExp;
  call: () => Promise<unknown>;
}

const CASES: Case[] = [
  {
    name: "createSession with an unknown field",
    code: /^INVALID_REQUEST/,
    call: () => rpc.createSession({ nope: 1 }),
  },
  {
    name: "createSession with a model that is not a route",
    code: /^INVALID_REQUEST/,
    call: () => rpc.createSession({ model: 5 }),
  },
  {
    name: "createSession with a filter naming no tool",
    code: /^INVALID_REQUEST/,
    call: () => rpc.createSession({ toolFilter: { allow: ["no_such_tool"] } }),
  },
  {
    name: "send to an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.send("not-a-uuid", { content: "x" }),
  },
  { name: "send without content", code: /^INVALID_REQUEST/, call: () => rpc.send(parent, {}) },
  {
    name: "send with content that is a number",
    code: /^INVALID_REQUEST/,
    call: () => rpc.send(parent, { content: 5 }),
  },
  {
    name: "send to a session that does not exist",
    code: /^NOT_FOUND/,
    call: () => rpc.send(GHOST, { content: "x" }),
  },
  {
    name: "start without a provider",
    code: /^INVALID_REQUEST/,
    call: () => rpc.start(parent, { prompt: "x" }),
  },
  {
    name: "start on an unknown provider",
    code: /^NO_PROVIDER/,
    call: () => rpc.start(parent, { provider: "nope", prompt: "x" }),
  },
  {
    name: "start from a parent that does not exist",
    code: /^NOT_FOUND/,
    call: () => rpc.start(GHOST, { provider: "spawn", prompt: "x" }),
  },
  { name: "interrupt an id that is no session id", code: /^INVALID_REQUEST/, call: () => rpc.interrupt("x") },
  { name: "interrupt a session that does not exist", code: /^NOT_FOUND/, call: () => rpc.interrupt(GHOST) },
  { name: "events after -5", code: /^INVALID_REQUEST/, call: () => rpc.events(parent, -5) },
  { name: "events with a limit of 501", code: /^INVALID_REQUEST/, call: () => rpc.events(parent, -1, 501) },
  { name: "events of a session that does not exist", code: /^NOT_FOUND/, call: () => rpc.events(GHOST) },
  {
    name: "describe an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.describe("../x"),
  },
  { name: "describe a session that does not exist", code: /^NOT_FOUND/, call: () => rpc.describe(GHOST) },
  {
    name: "startContinuable without a prompt",
    code: /^INVALID_REQUEST/,
    call: () => rpc.startContinuable(parent, { provider: "spawn", label: "c" }),
  },
  {
    name: "startContinuable on an unknown provider",
    code: /^NO_PROVIDER/,
    call: () => rpc.startContinuable(parent, { provider: "nope", prompt: "x", label: "c" }),
  },
  {
    name: "followup of an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.followup(parent, "x", { content: "x" }),
  },
  {
    name: "followup of a child the parent does not have",
    code: /^NOT_RESUMABLE/,
    call: () => rpc.followup(parent, GHOST, { content: "x" }),
  },
  { name: "followup without content", code: /^INVALID_REQUEST/, call: () => rpc.followup(parent, child, {}) },
  {
    name: "interruptChild of an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.interruptChild(parent, "x"),
  },
  {
    name: "interruptChild from a parent that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.interruptChild("x", child),
  },
  {
    name: "start with a negative maxDepth",
    code: /^INVALID_REQUEST|^INVALID_MAX_DEPTH/,
    call: () => rpc.start(parent, { provider: "spawn", prompt: "x", maxDepth: -1 }),
  },
  {
    name: "drain with child ids that are not a list",
    code: /^INVALID_REQUEST/,
    call: () => rpc.drain(parent, "all"),
  },
  {
    name: "drain of an id that is no child of the parent",
    code: /^UNAUTHORIZED/,
    call: () => rpc.drain(parent, ["x"]),
  },
  {
    name: "decide with a scope that is neither once nor always",
    code: /^INVALID_REQUEST/,
    call: () => rpc.decide(parent, GHOST, "approve", undefined, "forever"),
  },
  {
    name: "decide with a scope that is not a string",
    code: /^INVALID_REQUEST/,
    call: () => rpc.decide(parent, GHOST, "approve", undefined, true),
  },
  {
    name: "listChildren of an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.listChildren("x"),
  },
  {
    name: "listChildren of a session that does not exist",
    code: /^NOT_FOUND/,
    call: () => rpc.listChildren(GHOST),
  },
  {
    name: "listDescendants of an id that is no session id",
    code: /^INVALID_REQUEST/,
    call: () => rpc.listDescendants("x"),
  },
  {
    name: "listDescendants of a session that does not exist",
    code: /^NOT_FOUND/,
    call: () => rpc.listDescendants(GHOST),
  },
];

async function state(): Promise<string> {
  return hashOf([await tablesHash(parent), await tablesHash(child), await dumpTables(registryStub())]);
}

describe("bad arguments to the RPC entrypoint are refused and change nothing (semantics.md §13)", () => {
  beforeAll(async () => {
    parent = (await rpc.createSession({ label: "rpc target" })).id;
    child = (await rpc.startContinuable(parent, { provider: "spawn", prompt: "hello child", label: "child" }))
      .childId;
    await waitForTurnEnds(child, 1);
    await waitForTurnEnds(parent, 0);
  });

  it("covers every method that takes arguments, with at least 30 distinct cases", () => {
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThanOrEqual(30);
    const methods = new Set(CASES.map((c) => c.name.split(" ")[0]));
    for (const method of [
      "createSession",
      "send",
      "start",
      "interrupt",
      "events",
      "describe",
      "startContinuable",
      "followup",
      "interruptChild",
      "drain",
      "listChildren",
      "listDescendants",
    ])
      expect(methods, method).toContain(method);
  });

  for (const c of CASES) {
    it(`refuses ${c.name}`, async () => {
      const before = await state();
      expect(await rpcFailure(c.call)).toMatch(c.code);
      expect(await state()).toBe(before);
    });
  }

  it("accepts interruptChild of a child the parent does not have as a no-op (semantics.md §6.4)", async () => {
    const before = await state();
    expect(await rpc.interruptChild(parent, GHOST)).toEqual({ accepted: true });
    expect(await state()).toBe(before);
  });
});
