import { executeControl } from "./control-run";
import { ADMIN, bounded, type Runner, sleep, sqlOf, withChildIds } from "./harness";
import { workerFetch } from "./objects";
import { type ChildSpec, SCHEDULE_END, type Scenario, type Step } from "./scenario";

/**
 * The schedule's steps run against the sessions: each request recorded in the runner's history
 * with what the ledger needs (its key, content and scripted answers, the children its script
 * starts), each reset of the harness recorded with its outcome and, when it landed, as a fault.
 */

/** Runs one step of the schedule; steps whose target does not exist (a failed create) are skipped. */
export async function execute(runner: Runner, scenario: Scenario, step: Step): Promise<void> {
  const idOf = (ref: string): string | undefined => runner.ids.get(ref);
  const child = (ref: string): ChildSpec => scenario.children.find((c) => c.ref === ref)!;
  switch (step.op) {
    case "send": {
      const root = idOf(step.root);
      if (!root) return;
      const content = withChildIds(runner, step.content);
      const input = {
        key: step.key,
        content,
        tag: step.tag,
        answers: step.answers,
        children: step.children,
        ...(step.gated === undefined ? {} : { gated: step.gated }),
      };
      const body = { content, idempotencyKey: step.key };
      const op = await runner.call("send", step.root, "POST", `/v1/sessions/${root}/messages`, body, input);
      // a client retries an ambiguous send with the same key
      if (op.outcome === "ambiguous")
        await runner.call("retry", step.root, "POST", `/v1/sessions/${root}/messages`, body, input);
      return;
    }
    case "resend":
    case "conflict": {
      const root = idOf(step.root);
      const original = findSend(scenario.steps, step.of);
      if (!root || !original) return;
      const sent = withChildIds(runner, original.content);
      const content = step.op === "resend" ? sent : `${sent} (changed)`;
      await runner.call(
        step.op,
        step.root,
        "POST",
        `/v1/sessions/${root}/messages`,
        { content, idempotencyKey: original.key },
        // what was sent under the key (a conflict's changed body: it lands when the original never did)
        { key: original.key, content, tag: original.tag },
      );
      return;
    }
    case "start-one-shot":
    case "start-continuable": {
      const spec = child(step.child);
      const root = idOf(spec.root);
      if (!root) return;
      await runner.call(
        step.op,
        step.child,
        "POST",
        `/v1/sessions/${root}/subagents`,
        {
          provider: "spawn",
          prompt: step.prompt,
          mode: spec.mode,
          childId: spec.childId,
          label: `http ${step.tag}`,
        },
        { tag: step.tag, answers: step.answers, ...("children" in step ? { children: step.children } : {}) },
      );
      return;
    }
    case "followup": {
      const spec = child(step.child);
      const root = idOf(spec.root);
      if (!root) return;
      await runner.call(
        "followup",
        step.child,
        "POST",
        `/v1/sessions/${root}/subagents/${spec.id}/messages`,
        { content: step.content },
        { tag: step.tag, answers: step.answers },
      );
      return;
    }
    case "interrupt": {
      const root = idOf(step.root);
      if (root) await runner.call("interrupt", step.root, "POST", `/v1/sessions/${root}/interrupt`);
      return;
    }
    case "interrupt-child": {
      const spec = child(step.child);
      const root = idOf(spec.root);
      if (root)
        await runner.call(
          "interrupt-child",
          step.child,
          "POST",
          `/v1/sessions/${root}/subagents/${spec.id}/interrupt`,
        );
      return;
    }
    case "dispose": {
      const spec = child(step.child);
      const root = idOf(spec.root);
      const started = runner.history.find(
        (o) => o.kind === "start-one-shot" && o.target === step.child && o.outcome === "ok",
      );
      if (root && started)
        await runner.call(
          "dispose",
          step.child,
          "DELETE",
          `/v1/sessions/${root}/runs/${started.result?.runId}`,
        );
      return;
    }
    case "evict": {
      const id = idOf(step.target);
      if (!id) return;
      const start = performance.now();
      const outcome = await runner.evict(id);
      runner.record("evict", step.target, start, outcome === "evicted" ? "ok" : "fail", { outcome });
      if (outcome === "evicted")
        runner.fired.push({ kind: "evict", point: "between-ops", scope: step.target, at: Date.now() });
      return;
    }
    case "abort": {
      const id = idOf(step.target);
      if (!id) return;
      if (step.delayMs !== undefined) await sleep(step.delayMs);
      const start = performance.now();
      const outcome = await runner.abort(id);
      runner.record("abort", step.target, start, outcome === "aborted" ? "ok" : "fail", { outcome });
      if (outcome === "aborted")
        runner.fired.push({ kind: "abort", point: "mid-flight", scope: step.target, at: Date.now() });
      return;
    }
    case "alarm": {
      const id = idOf(step.target);
      if (!id) return;
      const start = performance.now();
      const outcome = await runner.alarmAgain(id);
      runner.record("alarm", step.target, start, outcome === "ran" ? "ok" : "fail", { outcome });
      return;
    }
    case "drain": {
      const root = idOf(step.root);
      if (!root) return;
      const childIds = step.children?.map((ref) => child(ref).id);
      await runner.call(
        "drain",
        step.root,
        "POST",
        `/v1/sessions/${root}/subagents/drain`,
        childIds ? { childIds } : {},
        // which children it drains (all the root's continuable ones when absent)
        childIds ? { childIds } : {},
      );
      return;
    }
    case "storm": {
      const ids = step.targets.map((t) => idOf(t)).filter((id): id is string => id !== undefined);
      if (ids.length === 0) return;
      const start = performance.now();
      let resets = 0;
      for (let i = 0; i < step.count; i++) {
        for (const id of ids) {
          const done = step.hard && i % 2 === 1 ? await runner.abort(id) : await runner.evict(id);
          if (done === "evicted" || done === "aborted") resets++;
        }
        await sleep(step.gapMs);
      }
      runner.record("storm", step.targets.join("+"), start, resets > 0 ? "ok" : "fail", { resets });
      if (resets > 0)
        runner.fired.push({
          kind: "reset-storm",
          point: "between-ops",
          scope: step.targets.join("+"),
          at: Date.now(),
        });
      return;
    }
    case "pause":
      await sleep(step.ms);
      return;
    case "decide": {
      const root = idOf(step.root);
      if (!root) return;
      if (step.delayMs !== undefined) await sleep(step.delayMs);
      const pending = await pendingOf(root, (a) => a.args?.text === step.gated, 8);
      const approval = pending[0];
      if (!approval) {
        runner.notes.push(`a decision (${step.decision}) found its call pending in no listing`);
        return;
      }
      await decide(runner, step.decision, step.root, root, approval, step.gated, step.reason);
      return;
    }
    case "control":
      await executeControl(runner, scenario, step.action, (s) => execute(runner, scenario, s));
      return;
    case "together":
      await Promise.all(step.steps.map((s) => execute(runner, scenario, s)));
      return;
  }
}

/** A pending approval as `GET /v1/sessions/:id/approvals` lists it. */
interface PendingApproval {
  approvalId: string;
  sessionId: string;
  toolCallId: string;
  tool: string;
  args?: { text?: string };
}

/**
 * The pending approvals of a session's subtree that match, listed up to `tries` times (a call's
 * turn may not have reached it yet; a listing may fail under faults). A listing changes nothing,
 * so it is no operation of the history.
 */
async function pendingOf(
  id: string,
  match: (a: PendingApproval) => boolean,
  tries: number,
): Promise<PendingApproval[]> {
  for (let i = 0; i < tries; i++) {
    if (i > 0) await sleep(25);
    const answer = await bounded(
      workerFetch(
        new Request(`http://example.com/v1/sessions/${id}/approvals`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        }),
      ).then(async (r) => ({ status: r.status, text: await r.text() })),
      5_000,
    );
    if (answer?.value.status !== 200) continue;
    const listed = (JSON.parse(answer.value.text) as { approvals: PendingApproval[] }).approvals.filter(
      match,
    );
    if (listed.length > 0) return listed;
  }
  return [];
}

/**
 * Decides one approval through the root's path, recorded as an operation of kind `kind` with
 * what the checker needs (the call's echoed text, the approval, the session that asked).
 */
async function decide(
  runner: Runner,
  kind: "approve" | "deny" | "settle-approval",
  ref: string,
  root: string,
  approval: PendingApproval,
  gated: string | undefined,
  reason: string | undefined,
): Promise<void> {
  const decision = kind === "approve" ? "approve" : "deny";
  await runner.call(
    kind,
    ref,
    "POST",
    `/v1/sessions/${root}/approvals/${approval.approvalId}`,
    { decision, ...(reason === undefined ? {} : { reason }) },
    {
      decision,
      approvalId: approval.approvalId,
      sessionId: approval.sessionId,
      toolCallId: approval.toolCallId,
      ...(gated === undefined ? {} : { gated }),
      ...(reason === undefined ? {} : { reason }),
    },
  );
}

/**
 * A client done with its work denies what its roots' subtrees still wait on (a call nobody
 * decides and no timeout bounds would hold its turn open forever), each recorded as a
 * `settle-approval`; answers how many it denied.
 */
export async function settleApprovals(runner: Runner, scenario: Scenario): Promise<number> {
  let denied = 0;
  for (const spec of scenario.roots) {
    const root = runner.ids.get(spec.ref);
    if (!root || spec.requireApproval === undefined) continue;
    for (const approval of await pendingOf(root, () => true, 3)) {
      await decide(runner, "settle-approval", spec.ref, root, approval, approval.args?.text, SCHEDULE_END);
      denied++;
    }
  }
  return denied;
}

function findSend(steps: readonly Step[], tag: string): Extract<Step, { op: "send" }> | undefined {
  for (const step of steps) {
    if (step.op === "send" && step.tag === tag) return step;
    if (step.op === "together") {
      const inner = findSend(step.steps, tag);
      if (inner) return inner;
    }
  }
  return undefined;
}

/**
 * Interrupts park unclaimed work until the next waking delivery (contract 4.8): wake every root
 * with one more message and every parked continuable child with a follow-up, as a client would.
 */
export async function flush(runner: Runner, scenario: Scenario): Promise<void> {
  for (const root of scenario.roots) {
    const id = runner.ids.get(root.ref);
    if (!id) continue;
    const content = `flush s${scenario.seed}-${root.ref}`;
    const key = `flush-${scenario.seed}-${root.ref}`;
    await runner.call(
      "flush",
      root.ref,
      "POST",
      `/v1/sessions/${id}/messages`,
      { content, idempotencyKey: key },
      { key, content, answers: [`echo: ${content}`] },
    );
  }
  for (const [ref, id] of [...runner.ids]) {
    if (/^r\d+$/.test(ref)) continue;
    const parked = await sqlOf<{ body: string }>(id, "SELECT body FROM loop").catch(() => []);
    const pending = await sqlOf<{ n: number }>(
      id,
      "SELECT count(*) AS n FROM inbox WHERE state = 'pending' AND waking = 1",
    ).catch(() => [{ n: 0 }]);
    const loop = parked[0] ? (JSON.parse(parked[0].body) as { parked?: boolean }) : undefined;
    if (!loop?.parked || Number(pending[0]?.n ?? 0) === 0) continue;
    const header = await sqlOf<{ body: string }>(id, "SELECT body FROM header").catch(() => []);
    const parent = header[0]
      ? (JSON.parse(header[0].body) as { parentSession: string | null }).parentSession
      : null;
    if (!parent) continue;
    await runner.call(
      "followup",
      ref,
      "POST",
      `/v1/sessions/${parent}/subagents/${id}/messages`,
      { content: `flush ${ref}` },
      { answers: [`echo: flush ${ref}`] },
    );
  }
}
