import { env } from "cloudflare:workers";
import { describe, expect, test } from "vitest";
import { type CheckInput, check, type Category } from "./checker";
import { allObjects, Runner, sleep } from "./harness";
import type { Scenario } from "./scenario";
import { type Snapshot, snapshot } from "./snapshot";

/**
 * The checker is not vacuous: a clean, fault-free forest passes it, and each kind of damage a
 * bug could do (planted into a copy of the snapshot, never into storage) is caught in its category.
 */

const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

async function cleanForest(): Promise<CheckInput> {
  const scenario: Scenario = {
    seed: 0,
    roots: [{ ref: "r0", backgroundMode: "continuable" }],
    children: [
      { ref: "h0", root: "r0", mode: "one-shot", id: crypto.randomUUID() },
      { ref: "h1", root: "r0", mode: "continuable", id: crypto.randomUUID() },
    ],
    steps: [],
    rules: [],
  };
  const before = new Set((await allObjects()).map((o) => o.toString()));
  const runner = new Runner(0, []);
  const created = await runner.call("create", "r0", "POST", "/v1/sessions", {});
  const root = String(created.result?.id);
  runner.bind("r0", root);
  for (const child of scenario.children) runner.bind(child.ref, child.id);
  // what each operation must produce goes into the ledger with it, as the campaign records it
  const send = (content: string, key: string, answers: string[]) =>
    runner.call(
      "send",
      "r0",
      "POST",
      `/v1/sessions/${root}/messages`,
      { content, idempotencyKey: key },
      { key, content, answers },
    );
  await send("hello s0-1", "k1", ["echo: hello s0-1"]);
  await runner.call(
    "start-one-shot",
    "h0",
    "POST",
    `/v1/sessions/${root}/subagents`,
    { provider: "spawn", prompt: "task s0-2", mode: "one-shot", childId: scenario.children[0]!.id },
    { answers: ["echo: task s0-2"] },
  );
  await runner.call(
    "start-continuable",
    "h1",
    "POST",
    `/v1/sessions/${root}/subagents`,
    {
      provider: "spawn",
      prompt: script(
        { call: [{ tool: "report", args: { output: "progress s0-3" } }] },
        { say: "final s0-3" },
      ),
      mode: "continuable",
      label: "http s0-3",
      childId: scenario.children[1]!.id,
    },
    { answers: ["final s0-3"] },
  );
  await send(
    script(
      {
        call: [
          { tool: "subagent", args: { description: "bg s0-4", run_in_background: true, prompt: "job s0-4" } },
        ],
      },
      { say: "started s0-4" },
    ),
    "k2",
    ["started s0-4", "echo: job s0-4"],
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
  expect([...sessions.values()].filter((s) => s.header).length).toBe(4);
  return { scenario, history: runner.history, ids: runner.ids, sessions };
}

/** A deep copy of the input whose sessions a test may damage. */
function copy(input: CheckInput): CheckInput & { sessions: Map<string, Snapshot> } {
  return { ...input, sessions: new Map([...input.sessions].map(([k, v]) => [k, structuredClone(v)])) };
}

function categories(input: CheckInput): Category[] {
  return [...new Set(check(input).violations.map((v) => v.category))].sort();
}

describe("the checker", () => {
  test("passes a clean forest and catches every kind of planted damage", async () => {
    const clean = await cleanForest();
    expect(check(clean).violations).toEqual([]);
    // the one-shot run and the messages the scripted model answers were compared with the ledger
    // (a message batched into one turn before a later one is answered by the later one's script),
    // and came out as it says
    const { answers } = check(clean);
    expect(answers.checked).toBeGreaterThanOrEqual(2);
    expect(answers).toEqual({ checked: answers.checked, asExpected: answers.checked, refused: {} });
    const root = clean.ids.get("r0")!;
    const oneShot = clean.ids.get("h0")!;
    const continuable = clean.ids.get("h1")!;
    const plant = (damage: (s: Map<string, Snapshot>) => void): Category[] => {
      const input = copy(clean);
      damage(input.sessions);
      return categories(input);
    };
    const at = (sessions: Map<string, Snapshot>, id: string): Snapshot => sessions.get(id)!;

    // an acknowledged message vanished (row and events)
    expect(
      plant((s) => {
        const r = at(s, root);
        const gone = r.inbox.find((m) => m.idempotencyKey === "k1")!.messageId;
        r.inbox = r.inbox.filter((m) => m.messageId !== gone);
        r.events = r.events.filter((e) => e.data?.messageId !== gone).map((e, seq) => ({ ...e, seq }));
      }),
    ).toContain("lost");
    // an acknowledged one-shot run lost its end
    expect(
      plant((s) => {
        const r = at(s, root);
        r.events = r.events
          .filter((e) => !(e.type === "subagent/end" && e.data.id === oneShot))
          .map((e, seq) => ({ ...e, seq }));
      }),
    ).toContain("lost");
    // a model answer appended twice
    expect(
      plant((s) => {
        const r = at(s, root);
        const answer = r.events.find(
          (e) => e.type === "assistant/message" && JSON.stringify(e.data).includes("echo: hello"),
        )!;
        r.events.push({ ...answer, seq: r.events.length });
      }),
    ).toContain("duplicated");
    // a subagent/start recorded twice
    expect(
      plant((s) => {
        const r = at(s, root);
        const start = r.events.find((e) => e.type === "subagent/start")!;
        r.events.push({ ...start, seq: r.events.length });
      }),
    ).toContain("duplicated");
    // a user message no operation sent
    expect(
      plant((s) => {
        const r = at(s, root);
        const row = r.inbox.find((m) => m.idempotencyKey === "k1")!;
        r.inbox.push({
          ...row,
          messageId: "msg_planted",
          idempotencyKey: "nobody-sent-this",
          state: "claimed",
        });
        r.events.push({
          seq: r.events.length,
          type: "agent/inbox/inserted",
          at: 0,
          data: { messageId: "msg_planted" },
        });
        r.events.push({
          seq: r.events.length,
          type: "agent/inbox/claimed",
          at: 0,
          data: { messageId: "msg_planted" },
        });
      }),
    ).toContain("unexpected");
    // a live child its parent does not own
    expect(
      plant((s) => {
        at(s, root).children = at(s, root).children.filter((c) => c.childId !== continuable);
        at(s, continuable).activation = { epoch: 2, runId: "planted" };
      }),
    ).toContain("orphaned");
    // an outbox row never delivered, and a run that never settled
    expect(
      plant((s) => {
        const row = at(s, oneShot).outbox[0]!;
        row.deliveredAt = null;
      }),
    ).toContain("stuck");
    expect(
      plant((s) => {
        at(s, root).runs[0]!.state = "running";
      }),
    ).toContain("stuck");
    // a created session the registry's directory does not list
    expect(categories({ ...copy(clean), directory: new Set() })).toContain("lost");
    expect(check({ ...copy(clean), directory: new Set([root]) }).violations).toEqual([]);
    // a transport row no operation made
    expect(
      plant((s) => {
        at(s, root).transports.push({ table: "remote_runs", runId: "planted", phase: "await" });
      }),
    ).toContain("unexpected");
    // a hole in the log
    expect(
      plant((s) => {
        at(s, continuable).events.splice(2, 1);
      }),
    ).toContain("seq-gaps");
    // an envelope marked delivered that its target never applied
    expect(
      plant((s) => {
        at(s, root).seen = at(s, root).seen.filter((id) => !id.startsWith("result:"));
      }),
    ).toContain("lost");
    expect(env.SESSIONS).toBeDefined();
  });

  test("compares answers with the ledger: a dropped answer, an error after a crash, a wrong result, a child's wrong answer", async () => {
    const clean = await cleanForest();
    const root = clean.ids.get("r0")!;
    const plant = (damage: (r: Snapshot) => void): Category[] => {
      const input = copy(clean);
      damage(input.sessions.get(root)!);
      return categories(input);
    };
    const reseq = (r: Snapshot) => {
      r.events = r.events.map((e, seq) => ({ ...e, seq }));
    };
    // a message whose answer was dropped (its turn ended with no answer)
    expect(
      plant((r) => {
        r.events = r.events.filter(
          (e) => !(e.type === "assistant/message" && JSON.stringify(e.data).includes("echo: hello s0-1")),
        );
        reseq(r);
      }),
    ).toEqual(["wrong"]);
    // a turn that answers `error` after a crash no fault of the schedule explains
    expect(
      plant((r) => {
        const claim = r.events.find((e) => e.type === "agent/inbox/claimed")!;
        const end = r.events.find((e) => e.type === "turn/end" && e.data.turn === claim.data.turn)!;
        end.data = {
          turn: end.data.turn,
          reason: "error",
          error: "the model step failed 4 times (the object restarted during each call)",
        };
      }),
    ).toEqual(["wrong"]);
    // a one-shot run whose result is not what its child was scripted to say
    expect(
      plant((r) => {
        r.runs[0]!.result = {
          output: [{ type: "text", text: "echo: something else" }],
          stopReason: "completed",
        };
      }),
    ).toEqual(["wrong"]);
    // a continuable child whose first message was answered with another text
    const child = clean.ids.get("h1")!;
    const damaged = copy(clean);
    const c = damaged.sessions.get(child)!;
    const final = c.events.find(
      (e) => e.type === "assistant/message" && JSON.stringify(e.data).includes("final s0-3"),
    )!;
    final.data = { ...final.data, content: [{ type: "text", text: "final s0-9" }] };
    expect(categories(damaged)).toEqual(["wrong"]);
    // a message answered twice (a step redone after its append)
    expect(
      plant((r) => {
        const answer = r.events.find(
          (e) => e.type === "assistant/message" && JSON.stringify(e.data).includes("echo: hello s0-1"),
        )!;
        r.events.push({ ...answer, seq: r.events.length });
      }),
    ).toContain("duplicated");
  });
});
