import { expect } from "vitest";
import type { CheckInput } from "./checker";
import { allObjects, bindReserved, type Op, Runner, sleep } from "./harness";
import type { ModelChild, Scenario } from "./scenario";
import { type Snapshot, snapshot } from "./snapshot";

/**
 * A clean, fault-free forest for the checker's own tests, run for real and snapshotted: two roots
 * (one starting continuable children in the background, one one-shot tasks), an HTTP-started
 * one-shot and continuable child, and messages whose scripted models start children in the
 * foreground and the background. Every operation goes into the ledger as the campaign records it.
 */

const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

function subagentCall(description: string, prompt: string, background: boolean): string {
  const args = { description, prompt, ...(background ? { run_in_background: true } : {}) };
  return script({ call: [{ tool: "subagent", args }] }, { say: `${description} done` });
}

function child(description: string, background: boolean, answer: string): ModelChild {
  return { description, background, answer, children: [] };
}

export async function cleanForest(): Promise<CheckInput> {
  const scenario: Scenario = {
    seed: 0,
    roots: [
      { ref: "r0", backgroundMode: "continuable" },
      { ref: "r1", backgroundMode: "one-shot" },
    ],
    children: [
      { ref: "h0", root: "r0", mode: "one-shot", childId: crypto.randomUUID(), id: "" },
      { ref: "h1", root: "r0", mode: "continuable", childId: crypto.randomUUID(), id: "" },
    ],
    steps: [],
    rules: [],
  };
  const before = new Set((await allObjects()).map((o) => o.toString()));
  const runner = new Runner(0, []);
  const roots: string[] = [];
  for (const root of scenario.roots) {
    const created = await runner.call("create", root.ref, "POST", "/v1/sessions", {
      backgroundMode: root.backgroundMode,
    });
    roots.push(String(created.result?.id));
    runner.bind(root.ref, roots.at(-1)!);
  }
  for (const c of scenario.children) bindReserved(runner, c, c.root);
  const send = (root: number, content: string, key: string, answers: string[], children: ModelChild[] = []) =>
    runner.call(
      "send",
      `r${root}`,
      "POST",
      `/v1/sessions/${roots[root]}/messages`,
      { content, idempotencyKey: key },
      { key, content, answers, children },
    );
  await send(0, "hello s0-1", "k1", ["echo: hello s0-1"]);
  await runner.call(
    "start-one-shot",
    "h0",
    "POST",
    `/v1/sessions/${roots[0]}/subagents`,
    { provider: "spawn", prompt: "task s0-2", mode: "one-shot", childId: scenario.children[0]!.childId },
    { answers: ["echo: task s0-2"] },
  );
  await runner.call(
    "start-continuable",
    "h1",
    "POST",
    `/v1/sessions/${roots[0]}/subagents`,
    {
      provider: "spawn",
      prompt: script(
        { call: [{ tool: "report", args: { output: "progress s0-3" } }] },
        { say: "final s0-3" },
      ),
      mode: "continuable",
      label: "http s0-3",
      childId: scenario.children[1]!.childId,
    },
    { answers: ["final s0-3"], children: [] },
  );
  // a continuable child in the background, a foreground run, a one-shot background task
  await send(
    0,
    subagentCall("bg s0-4", "job s0-4", true),
    "k2",
    ["bg s0-4 done", "echo: job s0-4"],
    [child("bg s0-4", true, "echo: job s0-4")],
  );
  await send(
    0,
    subagentCall("fg s0-5", "task s0-5", false),
    "k3",
    ["fg s0-5 done", "echo: task s0-5"],
    [child("fg s0-5", false, "echo: task s0-5")],
  );
  await send(
    1,
    subagentCall("bg s0-6", "task s0-6", true),
    "k4",
    ["bg s0-6 done", "echo: task s0-6"],
    [child("bg s0-6", true, "echo: task s0-6")],
  );
  const objects = async () => (await allObjects()).filter((o) => !before.has(o.toString()));
  await sleep(50);
  await runner.drain(objects);
  await runner.discoverModelChildren(new Set(scenario.children.map((c) => c.id)));
  const sessions = new Map<string, Snapshot>();
  for (const object of await objects()) {
    const s = await snapshot(object);
    sessions.set(s.header?.id ?? object.toString(), s);
  }
  expect([...sessions.values()].filter((s) => s.header).length).toBe(7);
  return { scenario, history: runner.history, ids: runner.ids, sessions, fired: [], resets: [] };
}

/** A deep copy of the input whose sessions and history a test may change. */
export function copy(input: CheckInput): CheckInput & { sessions: Map<string, Snapshot>; history: Op[] } {
  return {
    ...input,
    history: input.history.map((o) => structuredClone(o)),
    sessions: new Map([...input.sessions].map(([k, v]) => [k, structuredClone(v)])),
  };
}
