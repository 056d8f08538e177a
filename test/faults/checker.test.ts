import { describe, expect, test } from "vitest";
import { type CheckInput, check, type Category } from "./checker";
import { cleanForest, copy } from "./forest";
import type { Snapshot } from "./snapshot";

/**
 * The checker is not vacuous: a clean, fault-free forest passes it, and each kind of damage a
 * bug could do (planted into a copy of the snapshot, never into storage) is caught in its category.
 */

function categories(input: CheckInput): Category[] {
  return [...new Set(check(input).violations.map((v) => v.category))].sort();
}

describe("the checker", () => {
  test("passes a clean forest and catches every kind of planted damage", async () => {
    const clean = await cleanForest();
    expect(check(clean).violations).toEqual([]);
    // the HTTP-started one-shot run and continuable child, the messages whose turns the scripted
    // model answered (a settlement notice taken into a turn is answered instead of the script's
    // last step), and the three children the scripted models started were compared with the
    // ledger, and came out as it says
    const { answers } = check(clean);
    expect(answers.checked).toBeGreaterThanOrEqual(6);
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
    expect(check({ ...copy(clean), directory: new Set([root, clean.ids.get("r1")!]) }).violations).toEqual(
      [],
    );
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
