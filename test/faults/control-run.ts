import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { type ControlAction, type ControlChild, DOOMED_ROOT } from "./control-plan";
import { ADMIN, advanceClock, bindReserved, bounded, type Runner, stubOf } from "./harness";
import { workerFetch } from "./objects";
import type { Scenario, Step } from "./scenario";

/**
 * The control steps against the sessions (control-plan.ts says what they are), each request
 * recorded in the runner's history with what the ledger needs, and what the checker (control.ts)
 * reads inside workerd once the drain is over: what each member of a deleted tree still keeps
 * (rows, alarm), how its routes answer, whether the directory still lists it.
 */

const MINUTE = 60_000;

/** Creates the control roots (before the registry's faults are installed, like the others). */
export async function createControlRoots(runner: Runner, scenario: Scenario): Promise<void> {
  for (const ref of scenario.control?.roots ?? []) {
    const op = await runner.call("create", ref, "POST", "/v1/sessions", {
      label: `${ref} seed ${scenario.seed}`,
    });
    if (op.outcome === "ok") runner.bind(ref, String(op.result?.id));
  }
  // children with reserved ids: their rules are installed before they exist
  for (const child of scenario.control?.children ?? []) bindReserved(runner, child, child.parent);
}

/** A window of `minutes` minutes of the clock from the next minute, within one hour: its cron and times. */
export function windowCron(now: number, minutes: number): { cron: string; times: number[] } {
  let start = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  if (new Date(start).getUTCMinutes() + minutes > 60) start = Math.ceil(start / (60 * MINUTE)) * 60 * MINUTE;
  const d = new Date(start);
  const first = d.getUTCMinutes();
  const cron = `${first}-${first + minutes - 1} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} *`;
  return { cron, times: Array.from({ length: minutes }, (_, i) => start + i * MINUTE) };
}

function childOf(scenario: Scenario, ref: string): ControlChild {
  return scenario.control!.children.find((c) => c.ref === ref)!;
}

/**
 * A schedule's content: every firing says it again, so it carries no tag of the campaign's shape
 * (a tagged answer said twice would be a duplicated step: tables.ts).
 */
export function tickOf(tag: string): string {
  return `tick ${tag.replace("-", "/")}`;
}

/** The kind a control message is recorded as. */
export function messageKind(action: Extract<ControlAction, { kind: "message" }>): string {
  if (action.laterMs !== undefined) return "later";
  return action.delivery === "next-step" ? "steer" : action.delivery === "interrupt" ? "replace" : "message";
}

export async function executeControl(
  runner: Runner,
  scenario: Scenario,
  action: ControlAction,
  execute: (step: Step) => Promise<void>,
): Promise<void> {
  switch (action.kind) {
    case "message": {
      const id = runner.ids.get(action.root);
      if (!id) return;
      if (action.delayMs) await new Promise((resolve) => setTimeout(resolve, action.delayMs));
      const key = `key-${action.tag}`;
      const notBefore = action.laterMs === undefined ? undefined : Date.now() + action.laterMs;
      const body = {
        content: action.content,
        idempotencyKey: key,
        ...(action.delivery === "next-turn" ? {} : { delivery: action.delivery }),
        ...(notBefore === undefined ? {} : { notBefore }),
      };
      const input = {
        key,
        tag: action.tag,
        content: action.content,
        delivery: action.delivery,
        ...(notBefore === undefined ? {} : { notBefore }),
      };
      const kind = messageKind(action);
      const path = `/v1/sessions/${id}/messages`;
      // a client retries an ambiguous send with the same key (and the same body)
      for (let i = 0; i < 2; i++) {
        const op = await runner.call(
          i === 0 ? kind : `${kind}-retry`,
          action.root,
          "POST",
          path,
          body,
          input,
        );
        if (op.outcome !== "ambiguous") return;
      }
      return;
    }
    case "schedule": {
      const id = runner.ids.get(action.root);
      if (!id) return;
      const { cron, times } = windowCron(Date.now(), action.minutes);
      const content = tickOf(action.tag);
      await runner.call(
        "schedule",
        action.root,
        "POST",
        `/v1/sessions/${id}/schedules`,
        { cron, content },
        { tag: action.tag, cron, content, times },
      );
      return;
    }
    case "unschedule":
      await unschedule(runner, action.root, (content) => content === tickOf(action.tag), "unschedule");
      return;
    case "tick": {
      const id = runner.ids.get(action.root);
      if (!id) return;
      advanceClock(action.ms);
      if (!action.lose) {
        await execute({ op: "alarm", target: action.root });
        return;
      }
      // the platform loses the alarm that was due: owed work waits for a repair
      const start = performance.now();
      await bounded(
        runInDurableObject(stubOf(id), (_i: unknown, state: DurableObjectState) =>
          state.storage.deleteAlarm(),
        ),
        5_000,
      );
      runner.record("lose-alarm", action.root, start, "ok");
      runner.fired.push({ kind: "lost-alarm", point: "alarm-delivery", scope: action.root, at: Date.now() });
      return;
    }
    case "start": {
      const child = childOf(scenario, action.child);
      const parent = runner.ids.get(child.parent);
      if (!parent) return;
      const body = {
        provider: "spawn",
        prompt: action.prompt,
        mode: child.mode,
        childId: child.childId,
        label: `control ${action.tag}`,
        ...(child.deadlineSeconds === undefined ? {} : { deadlineSeconds: child.deadlineSeconds }),
      };
      const kind = child.deadlineSeconds === undefined ? "start-doomed" : "start-deadline";
      const input = {
        tag: action.tag,
        mode: child.mode,
        ...(action.answer === undefined ? {} : { answers: [action.answer] }),
        // the requests it makes: its parent's, the registry's (the provider)
        reaches: [child.parent, "registry"],
      };
      // a client retries a start cut off with the same request and child id (it re-attaches)
      for (let i = 0; i < 3; i++) {
        const path = `/v1/sessions/${parent}/subagents`;
        const op = await runner.call(i === 0 ? kind : `${kind}-retry`, child.ref, "POST", path, body, input);
        if (op.outcome !== "ambiguous") return;
      }
      return;
    }
    case "followup": {
      const child = childOf(scenario, action.child);
      const parent = runner.ids.get(child.parent);
      if (!parent) return;
      await runner.call(
        "followup-deadline",
        child.ref,
        "POST",
        `/v1/sessions/${parent}/subagents/${child.id}/messages`,
        { content: action.content },
        { tag: action.tag, content: action.content, reaches: [child.parent] },
      );
      return;
    }
    case "delete": {
      const id = runner.ids.get(action.root);
      if (!id) return;
      // a client retries a deletion cut off without an answer
      for (let i = 0; i < 3; i++) {
        const members = membersOf(runner, scenario, action.root);
        const kind = i === 0 ? "delete" : "delete-retry";
        const op = await runner.call(kind, action.root, "DELETE", `/v1/sessions/${id}`, undefined, {
          members,
        });
        if (op.outcome === "ok") {
          // from the answer on: every route of every member known now
          const start = performance.now();
          const statuses = await routeStatuses(runner, members);
          runner.record("probe-deleted", action.root, start, "ok", { statuses });
        }
        if (op.outcome !== "ambiguous") return;
      }
      return;
    }
  }
}

/** The members of the tree of `root` the client knows: itself, the children its steps started, and what models started below them. */
export function membersOf(runner: Runner, scenario: Scenario, root: string): string[] {
  const members = [root];
  for (const child of scenario.control?.children ?? []) if (child.parent === root) members.push(child.ref);
  for (let i = 0; i < members.length; i++)
    for (const ref of runner.ids.keys())
      if (ref.startsWith(`m:${members[i]}:`) && !members.includes(ref)) members.push(ref);
  return members.filter((ref) => runner.ids.has(ref));
}

/** The routes a client may call of a session, each as method, path and body. */
function routesOf(id: string): [string, string, unknown?][] {
  return [
    ["GET", `/v1/sessions/${id}`],
    ["GET", `/v1/sessions/${id}/events`],
    ["POST", `/v1/sessions/${id}/messages`, { content: "anyone?" }],
    ["POST", `/v1/sessions/${id}/interrupt`],
    ["GET", `/v1/sessions/${id}/approvals`],
    ["GET", `/v1/sessions/${id}/schedules`],
    ["POST", `/v1/sessions/${id}/schedules`, { cron: "* * * * *", content: "x" }],
    ["GET", `/v1/sessions/${id}/children`],
    ["GET", `/v1/sessions/${id}/descendants`],
    ["GET", `/v1/sessions/${id}/outbox`],
    ["DELETE", `/v1/sessions/${id}`],
  ];
}

/** How each route of each member answers (reads included), by member reference. */
export async function routeStatuses(
  runner: Runner,
  members: readonly string[],
): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const ref of members) {
    const id = runner.ids.get(ref);
    if (!id) continue;
    const statuses: number[] = [];
    for (const [method, path, body] of routesOf(id)) {
      const request = new Request(`http://example.com${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? null : JSON.stringify(body),
      });
      const answer = await bounded(
        workerFetch(request).then(async (r) => {
          await r.text();
          return r.status;
        }),
        5_000,
      );
      statuses.push(answer ? answer.value : 0);
    }
    out[ref] = statuses;
  }
  return out;
}

/** The schedules of `root` listed (a listing changes nothing: no operation of the history). */
async function schedulesOf(id: string): Promise<{ scheduleId: string; content: unknown }[]> {
  const answer = await bounded(
    workerFetch(
      new Request(`http://example.com/v1/sessions/${id}/schedules`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    ).then(async (r) => ({ status: r.status, text: await r.text() })),
    5_000,
  );
  if (answer?.value.status !== 200) return [];
  return (JSON.parse(answer.value.text) as { schedules: { scheduleId: string; content: unknown }[] })
    .schedules;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

/** Deletes the schedules of `root` whose content matches, each recorded as `kind`. */
async function unschedule(
  runner: Runner,
  root: string,
  match: (content: string) => boolean,
  kind: string,
): Promise<void> {
  const id = runner.ids.get(root);
  if (!id) return;
  for (const s of await schedulesOf(id)) {
    if (!match(textOf(s.content))) continue;
    await runner.call(kind, root, "DELETE", `/v1/sessions/${id}/schedules/${s.scheduleId}`, undefined, {
      scheduleId: s.scheduleId,
      content: textOf(s.content),
    });
  }
}

/**
 * Once the drain is over, the client removes the schedules it made (a window's last firing is
 * due a year later: an alarm that waits for no work of the schedule's).
 */
export async function finishControl(
  runner: Runner,
  scenario: Scenario,
  execute: (step: Step) => Promise<void>,
): Promise<void> {
  for (const root of scenario.control?.roots ?? []) {
    if (root === DOOMED_ROOT || !runner.ids.has(root)) continue;
    // the clock passed its times: the platform runs its alarm (the checker holds the times it
    // passed to a firing each), then the client removes what it made
    await execute({ op: "alarm", target: root });
    await unschedule(runner, root, () => true, "unschedule-end");
  }
}

/** What a deleted tree's member still keeps: its tables with rows (sqlite's own aside), and its alarm. */
export interface Remains {
  tables: Record<string, number>;
  alarm: number | null;
}

/** What the checker reads of the doomed tree once the drain is over. */
export interface ControlEvidence {
  /** Member reference -> what its object keeps. */
  remains: Record<string, Remains>;
  /** Member reference -> how each route answers it now. */
  routes: Record<string, number[]>;
  /** Whether the registry's directory still lists the doomed root. */
  listed: boolean;
}

async function remainsOf(id: string): Promise<Remains | undefined> {
  const read = await bounded(
    runInDurableObject(
      env.SESSIONS.get(env.SESSIONS.idFromName(id)),
      async (_i: unknown, state: DurableObjectState) => {
        const tables: Record<string, number> = {};
        for (const { name } of state.storage.sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
          .toArray()) {
          if (name.startsWith("_cf_") || name.startsWith("sqlite_")) continue;
          tables[name] = state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).one().n;
        }
        return { tables, alarm: await state.storage.getAlarm() };
      },
    ),
    5_000,
  );
  return read?.value;
}

/** Reads the doomed tree: routes first (a route that brought a member back would show in its rows). */
export async function collectControl(
  runner: Runner,
  scenario: Scenario,
): Promise<ControlEvidence | undefined> {
  if (!scenario.control?.roots.includes(DOOMED_ROOT) || !runner.ids.has(DOOMED_ROOT)) return undefined;
  const members = membersOf(runner, scenario, DOOMED_ROOT);
  const routes = await routeStatuses(runner, members);
  const remains: Record<string, Remains> = {};
  for (const ref of members) {
    const read = await remainsOf(runner.ids.get(ref)!);
    if (read) remains[ref] = read;
  }
  const root = runner.ids.get(DOOMED_ROOT)!;
  const registry = env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  const listed = await runInDurableObject(
    registry,
    (_i: unknown, state: DurableObjectState) =>
      state.storage.sql.exec("SELECT id FROM sessions WHERE id = ?", root).toArray().length > 0,
  );
  return { remains, routes, listed };
}
