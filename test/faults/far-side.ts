import { runInDurableObject } from "cloudflare:test";
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { installAcpAgent } from "../support/acp-agent";
import { workerFetch } from "../support/api";
import { installRemoteNet, REMOTE_URL } from "../support/remote";
import { type AnswerTally, emptyTally } from "./answers";
import type { Violation } from "./checker";
import { ADMIN, allObjects, type Fired, type Op, restoreClock, Runner, sleep, sqlOf } from "./harness";
import { Rng } from "./prng";
import type { SeedReport } from "./summary";
import { FAR_TOOL_TIMEOUT_MS } from "./worker";

/**
 * The fault campaign's out-of-process half: a session delegates through every provider kind that
 * leaves the object (a remote deployment with signed callbacks, an A2A agent, an ACP agent over a
 * WebSocket) and calls a real MCP server's tools, while the network between them fails on a
 * seeded schedule and the parent is reset mid-run. The far sides are real: the remote deployment
 * and the A2A agent are this Worker itself behind a loopback network (test/support/remote.ts;
 * the A2A face is served by the SDK's handlers), the ACP agent is the ACP SDK's agent side
 * (test/support/acp-agent.ts), the MCP server is the MCP SDK's (test/setup/mcp-server.ts), and
 * the user tool is the campaign Worker's own (test/faults/worker.ts: it answers, throws or hangs
 * past its timeout, as the step tells it), and the MCP SDK's client calls the session's own MCP
 * server face (a foreground `subagent` call) through the same faulty network.
 *
 * Each network fault acts at one of the paths below, on the calls after `after` hits, `times`
 * times: `down` (the connection fails before the far side sees the call), `lose-answer` (the far
 * side took the call, the answer is lost), `overloaded` (a 503 answer) or `delay`.
 *
 * The ledger: every acknowledged start settles exactly once (one `subagent/start`, one
 * `subagent/end`), with its far side's scripted answer, or with an error that a fault on its
 * paths explains (counted refused by reason); a remote or A2A run made exactly one session on
 * the far side, whose one message is the prompt; every acknowledged MCP message is answered once,
 * its tool result the server's answer or an error an MCP fault explains; nothing is left owed.
 *
 *   FAR_SIDE_SEEDS=30 (default)   FAR_SIDE_SEED=1003 replays one seed (far-side seeds start at 1001)
 */

declare module "vitest" {
  export interface ProvidedContext {
    farSideSeeds: string;
    farSideSeed: string;
  }
}

/** The paths a network fault can act at. */
export const FAR_POINTS = [
  "remote-call",
  "a2a-call",
  "callback",
  "acp-connect",
  "mcp-call",
  "mcp-face",
] as const;
type FarPoint = (typeof FAR_POINTS)[number];
type NetKind = "down" | "lose-answer" | "overloaded" | "delay";

interface NetRule {
  point: FarPoint;
  kind: NetKind;
  after: number;
  times: number;
  ms?: number;
}

type Provider = "remote" | "a2a" | "acp";
const PROVIDER_NAMES: Record<Provider, string> = { remote: "far-remote", a2a: "far-a2a", acp: "far-acp" };
/** The paths each provider's runs travel. */
const PATHS: Record<Provider, readonly FarPoint[]> = {
  remote: ["remote-call", "callback"],
  a2a: ["a2a-call"],
  acp: ["acp-connect"],
};
const ACP_TOKEN = "acp-secret-token-0123456789";
/** The test MCP server (vitest.config.ts binds it for the tests only). */
const testEnv = env as unknown as { TEST_MCP_URL: string; TEST_MCP_TOKEN: string };

type FarStep =
  | { op: "start"; provider: Provider; tag: string; prompt: string; answer: string }
  | { op: "mcp"; tag: string }
  | { op: "tool"; tag: string; behaviour: "answer" | "throw" | "hang" }
  | { op: "face"; tag: string }
  | { op: "abort" }
  | { op: "evict" }
  | { op: "pause"; ms: number };

interface FarScenario {
  seed: number;
  steps: FarStep[];
  rules: NetRule[];
}

export function generateFarSide(seed: number): FarScenario {
  const rng = new Rng(seed);
  let n = 0;
  const tag = (): string => `f${seed}-${n++}`;
  const steps: FarStep[] = [];
  const total = rng.int(5, 9);
  while (steps.length < total) {
    const kind = rng.weighted([
      ["start", 8],
      ["mcp", 3],
      ["tool", 3],
      ["face", 2],
      ["abort", 2],
      ["evict", 1],
      ["pause", 2],
    ] as const);
    if (kind === "start") {
      const provider = rng.pick(["remote", "a2a", "acp"] as const);
      const t = tag();
      // the far sides answer with an echo: this Worker's scripted model, the ACP agent's echo
      steps.push({ op: "start", provider, tag: t, prompt: `far ${t}`, answer: `echo: far ${t}` });
    } else if (kind === "mcp") steps.push({ op: "mcp", tag: tag() });
    else if (kind === "face") steps.push({ op: "face", tag: tag() });
    else if (kind === "tool")
      steps.push({
        op: "tool",
        tag: tag(),
        behaviour: rng.weighted([
          ["answer", 4],
          ["throw", 1],
          ["hang", 1],
        ] as const),
      });
    else if (kind === "pause") steps.push({ op: "pause", ms: rng.int(5, 60) });
    else steps.push({ op: kind });
  }
  const rules: NetRule[] = [];
  // the seed's focus path first, so every path is covered every five seeds
  const focus = FAR_POINTS[seed % FAR_POINTS.length]!;
  const count = rng.int(2, 4);
  for (let i = 0; i < count; i++) {
    const point = i === 0 ? focus : rng.pick(FAR_POINTS);
    const kinds: NetKind[] =
      point === "acp-connect"
        ? ["down", "overloaded", "delay"]
        : ["down", "lose-answer", "overloaded", "delay"];
    const kind = rng.pick(kinds);
    rules.push({
      point,
      kind,
      after: rng.int(0, 3),
      times: rng.int(1, 3),
      ...(kind === "delay" ? { ms: rng.int(5, 80) } : {}),
    });
  }
  return { seed, steps, rules };
}

/** Which path a call of the parent (or of the far side's callbacks) travels, if any. */
function pointOf(url: URL, mcpHost: string): FarPoint | undefined {
  if (url.hostname.endsWith("acp.test")) return "acp-connect";
  if (url.host === "face.test") return "mcp-face";
  if (url.host === mcpHost) return "mcp-call";
  if (url.pathname.startsWith("/v1/callbacks/")) return "callback";
  if (url.pathname.startsWith("/v1/a2a") || url.pathname.includes("agent-card.json")) return "a2a-call";
  if (url.host === "remote.test") return "remote-call";
  return undefined;
}

/** The faulty network between the parent and its far sides (wraps the loopback and the ACP agent). */
class FaultyNet {
  readonly fired: Fired[] = [];
  readonly hits: Record<string, number> = {};
  #rules: NetRule[] = [];
  readonly #state = new Map<NetRule, { seen: number; done: number }>();
  readonly #inner: typeof fetch;
  readonly #mcpHost: string;

  constructor(mcpUrl: string) {
    this.#inner = globalThis.fetch;
    this.#mcpHost = new URL(mcpUrl).host;
    globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      this.#fetch(new Request(input, init))) as typeof fetch;
  }

  arm(rules: NetRule[]): void {
    this.#rules = rules;
    this.#state.clear();
    this.fired.length = 0;
    for (const key of Object.keys(this.hits)) delete this.hits[key];
  }

  restore(): void {
    globalThis.fetch = this.#inner;
  }

  async #fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const point = pointOf(url, this.#mcpHost);
    if (point === undefined) return this.#inner(request);
    // face.test is this Worker's MCP server face, reached by the campaign's MCP client
    const onward = (r: Request) =>
      point === "mcp-face"
        ? workerFetch(new Request(`http://example.com${url.pathname}${url.search}`, r))
        : this.#inner(r);
    this.hits[point] = (this.hits[point] ?? 0) + 1;
    const rule = this.#take(point);
    if (!rule) return onward(request);
    this.fired.push({ kind: `net-${rule.kind}` as Fired["kind"], point, scope: point });
    switch (rule.kind) {
      case "down":
        throw new TypeError("Network connection lost.");
      case "overloaded":
        return new Response(JSON.stringify({ error: { code: "OVERLOADED", message: "injected" } }), {
          status: 503,
          headers: { "content-type": "application/json" },
        });
      case "delay":
        await sleep(rule.ms ?? 20);
        return onward(request);
      case "lose-answer": {
        const response = await onward(request);
        await response.body?.cancel();
        throw new TypeError("Network connection lost.");
      }
    }
  }

  #take(point: FarPoint): NetRule | undefined {
    for (const rule of this.#rules) {
      if (rule.point !== point) continue;
      const state = this.#state.get(rule) ?? { seen: 0, done: 0 };
      this.#state.set(rule, state);
      state.seen++;
      if (state.seen <= rule.after || state.done >= rule.times) continue;
      state.done++;
      return rule;
    }
    return undefined;
  }
}

const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

function textOfContent(content: unknown): string {
  return ((content as { text?: string }[] | undefined) ?? []).map((c) => c.text ?? "").join("");
}

async function runFarSeed(seed: number, net: FaultyNet): Promise<SeedReport> {
  const t0 = performance.now();
  const scenario = generateFarSide(seed);
  const before = new Set((await allObjects()).map((o) => o.toString()));
  const objects = async (): Promise<DurableObjectId[]> =>
    (await allObjects()).filter((o) => !before.has(o.toString()));
  const runner = new Runner(seed, []);
  const violations: Violation[] = [];
  const answers = emptyTally();
  try {
    const created = await runner.call("create", "r0", "POST", "/v1/sessions", {
      label: `far side seed ${seed}`,
      mcpServers: [{ name: "tools", url: testEnv.TEST_MCP_URL, token: testEnv.TEST_MCP_TOKEN }],
    });
    if (created.outcome !== "ok") throw new Error(`the root could not be created: ${created.status}`);
    const root = String(created.result?.id);
    runner.bind("r0", root);
    net.arm(scenario.rules);
    const t1 = performance.now();
    for (const step of scenario.steps) await execute(runner, root, step);
    const t2 = performance.now();
    // short steps of the mocked clock: a far side that failed a few calls is retried well
    // before the 600 s deadline, as it would be in real time
    let quiesced = await runner.drain(objects, () => [root], { stepMs: 20_000 });
    // an ACP agent that could not be reached is tried again on a real-time backoff (seconds, in
    // the object's memory): give those runs the time, then drain what they started
    if (await waitForRuns(root, 10_000))
      quiesced = (await runner.drain(objects, () => [root], { stepMs: 20_000 })) && quiesced;
    await runner.settle();
    const t3 = performance.now();
    await checkFarSide(root, runner.history, net.fired, objects, violations, answers);
    if (!quiesced) violations.push({ category: "stuck", session: "*", message: "the drain never quiesced" });
    return {
      seed,
      ms: Math.round(performance.now() - t0),
      ops: runner.history.map((o) => ({ kind: o.kind, outcome: o.outcome })),
      injected: [...net.fired, ...runner.fired],
      pointHits: { ...net.hits },
      violations,
      answers,
      notes: runner.notes,
      quiesced,
      sessions: (await objects()).length,
      evictBusy: runner.evictBusy,
      alarmRetries: runner.alarmErrors,
      phases: {
        setup: Math.round(t1 - t0),
        ops: Math.round(t2 - t1),
        drain: Math.round(t3 - t2),
        check: Math.round(performance.now() - t3),
      },
    };
  } finally {
    net.arm([]);
    runner.removePlans();
    restoreClock();
  }
}

/** Waits (real time, bounded) until no run of the root is unsettled; true when some had been. */
async function waitForRuns(root: string, ms: number): Promise<boolean> {
  const unsettled = async () =>
    (await sqlOf<{ n: number }>(root, "SELECT count(*) AS n FROM runs WHERE state != 'settled'"))[0]?.n ?? 0;
  if ((await unsettled()) === 0) return false;
  const deadline = performance.now() + ms;
  while ((await unsettled()) > 0 && performance.now() < deadline) await sleep(50);
  return true;
}

async function execute(runner: Runner, root: string, step: FarStep): Promise<void> {
  switch (step.op) {
    case "start":
      await runner.call(
        "far-start",
        "r0",
        "POST",
        `/v1/sessions/${root}/subagents`,
        { provider: PROVIDER_NAMES[step.provider], prompt: step.prompt, mode: "one-shot" },
        { ...step },
      );
      return;
    case "mcp":
      await runner.call(
        "far-mcp",
        "r0",
        "POST",
        `/v1/sessions/${root}/messages`,
        {
          content: script(
            { call: [{ tool: "mcp__tools__shout", args: { text: `mcp ${step.tag}` } }] },
            { say: `shouted ${step.tag}` },
          ),
        },
        { tag: step.tag },
      );
      return;
    case "tool":
      await runner.call(
        "far-tool",
        "r0",
        "POST",
        `/v1/sessions/${root}/messages`,
        {
          content: script(
            { call: [{ tool: "far_tool", args: { tag: step.tag, behaviour: step.behaviour } }] },
            { say: `tooled ${step.tag}` },
          ),
        },
        { tag: step.tag, behaviour: step.behaviour },
      );
      return;
    case "face": {
      // an MCP client (the MCP SDK's own) on the session's MCP server face, through the faulty
      // network: a foreground subagent call, whose answer is the child's
      const op: Op = runner.record("far-face", "r0", performance.now(), "ambiguous");
      op.input = { tag: step.tag };
      try {
        const client = new McpClient({ name: "far-side campaign", version: "1.0.0" });
        const transport = new StreamableHTTPClientTransport(
          new URL(`https://face.test/v1/sessions/${root}/mcp`),
          {
            // through the faulty network (FaultyNet routes face.test to this Worker)
            fetch: (input, init) => globalThis.fetch(input, init),
            requestInit: { headers: { authorization: `Bearer ${ADMIN}` } },
          },
        );
        await client.connect(transport);
        const result = await client.callTool({
          name: "subagent",
          arguments: { description: `face ${step.tag}`, prompt: `face ${step.tag}` },
        });
        op.outcome = "ok";
        op.result = { text: textOfContent(result.content), isError: result.isError === true };
        await client.close().catch(() => {});
      } catch (error) {
        op.outcome = "fail";
        op.code = String(error).slice(0, 80);
      }
      op.end = performance.now();
      return;
    }
    case "abort": {
      const start = performance.now();
      const outcome = await runner.abort(root);
      runner.fired.push({ kind: "abort", point: "mid-flight", scope: "r0" });
      runner.record("abort", "r0", start, outcome === "aborted" ? "ok" : "ambiguous", { outcome });
      return;
    }
    case "evict": {
      const start = performance.now();
      const outcome = await runner.evict(root);
      if (outcome === "evicted") runner.fired.push({ kind: "evict", point: "between-ops", scope: "r0" });
      runner.record("evict", "r0", start, "ok", { outcome });
      return;
    }
    case "pause":
      await sleep(step.ms);
      return;
  }
}

interface LogRow {
  seq: number;
  type: string;
  data: string;
}

/** Compares the root (and the far sides' sessions) with the ledger of what each operation must produce. */
async function checkFarSide(
  root: string,
  history: readonly Op[],
  fired: readonly Fired[],
  objects: () => Promise<DurableObjectId[]>,
  violations: Violation[],
  tally: AnswerTally,
): Promise<void> {
  const flag = (category: Violation["category"], message: string): void => {
    violations.push({ category, session: "r0", message });
  };
  const refuse = (reason: string): void => {
    tally.refused[reason] = (tally.refused[reason] ?? 0) + 1;
  };
  const log = (
    await sqlOf<LogRow & Record<string, SqlStorageValue>>(
      root,
      "SELECT seq, type, data FROM events ORDER BY seq",
    )
  ).map((r) => ({ seq: r.seq, type: r.type, data: JSON.parse(r.data) as Record<string, any> }));
  log.forEach((e, i) => {
    if (e.seq !== i) flag("seq-gaps", `event ${e.seq} at position ${i}`);
  });
  const faulted = (points: readonly FarPoint[]): string[] => [
    ...new Set(
      fired.filter((f) => points.includes(f.point as FarPoint) && f.kind !== "net-delay").map((f) => f.point),
    ),
  ];
  const resets = history.some((o) => o.kind === "abort" || o.kind === "evict");

  // far sessions this Worker made for the runs (remote and A2A), by the tag of their one prompt
  const farByTag = new Map<string, string[]>();
  for (const object of await objects()) {
    const users = await runInDurableObject(
      env.SESSIONS.get(object),
      (_i: unknown, state: DurableObjectState) => {
        const sql = state.storage.sql;
        const has = sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'events'").toArray().length > 0;
        return has
          ? sql.exec<{ data: string }>("SELECT data FROM events WHERE type = 'user/message'").toArray()
          : [];
      },
    );
    for (const { data } of users) {
      const match = /far (f\d+-\d+)/.exec(JSON.stringify(JSON.parse(data).content));
      if (match) farByTag.set(match[1]!, [...(farByTag.get(match[1]!) ?? []), object.toString()]);
    }
  }

  const runs = await sqlOf<{ run_id: string; state: string; result: string | null }>(
    root,
    "SELECT run_id, state, result FROM runs",
  );
  for (const op of history.filter((o) => o.kind === "far-start")) {
    const step = op.input as unknown as Extract<FarStep, { op: "start" }>;
    if (op.outcome !== "ok") {
      if (op.outcome === "fail") flag("unexpected", `start ${step.tag} refused: ${op.status} ${op.code}`);
      continue;
    }
    tally.checked++;
    const runId = String(op.result?.runId);
    const starts = log.filter((e) => e.type === "subagent/start" && e.data.runId === runId);
    const ends = log.filter((e) => e.type === "subagent/end" && e.data.runId === runId);
    if (starts.length !== 1) flag("duplicated", `run ${step.tag} has ${starts.length} subagent/start`);
    if (ends.length !== 1) {
      flag(ends.length === 0 ? "stuck" : "duplicated", `run ${step.tag} has ${ends.length} subagent/end`);
      continue;
    }
    const run = runs.find((r) => r.run_id === runId);
    if (run?.state !== "settled") flag("stuck", `run ${step.tag} is ${run?.state}`);
    const result = run?.result
      ? (JSON.parse(run.result) as { output: { text: string }[]; stopReason: string; diagnostic?: string })
      : undefined;
    const text = result?.output.map((b) => b.text).join("") ?? "";
    const far = farByTag.get(step.tag) ?? [];
    if (step.provider !== "acp" && far.length > 1)
      flag("duplicated", `run ${step.tag} made ${far.length} sessions on the far side`);
    if (result?.stopReason === "completed" && text === step.answer) {
      tally.asExpected++;
      continue;
    }
    const explained = faulted(PATHS[step.provider]);
    if (result?.stopReason === "error" && (explained.length > 0 || (step.provider === "acp" && resets)))
      refuse(`far side unreachable (${explained.join(", ") || "reset during the ACP prompt"})`);
    else
      flag(
        "wrong",
        `run ${step.tag} (${step.provider}) ended ${result?.stopReason} with ${JSON.stringify(text).slice(0, 80)}: ${result?.diagnostic?.slice(0, 200)}`,
      );
  }

  for (const op of history.filter((o) => o.kind === "far-mcp")) {
    if (op.outcome !== "ok") continue;
    tally.checked++;
    const tag = String(op.input?.tag);
    const messageId = String(op.result?.messageId);
    const finals = log.filter(
      (e) => e.type === "assistant/message" && JSON.stringify(e.data.content).includes(`shouted ${tag}"`),
    );
    if (finals.length !== 1) {
      const ended = log.some((e) => e.type === "agent/inbox/claimed" && e.data.messageId === messageId);
      flag(
        finals.length === 0 ? (ended ? "wrong" : "lost") : "duplicated",
        `message ${tag} answered ${finals.length} times`,
      );
      continue;
    }
    const results = log.filter(
      (e) =>
        e.type === "tool/result" &&
        e.data.name === "mcp__tools__shout" &&
        JSON.stringify(e.data.content).includes(tag.toUpperCase()),
    );
    const errors = log.filter(
      (e) => e.type === "tool/result" && e.data.name === "mcp__tools__shout" && e.data.isError === true,
    );
    if (results.length === 1) tally.asExpected++;
    else if (results.length === 0 && errors.length > 0 && faulted(["mcp-call"]).length > 0)
      refuse("MCP server unreachable (mcp-call)");
    else
      flag(
        results.length > 1 ? "duplicated" : "wrong",
        `the MCP call of ${tag} answered ${results.length} times: ${JSON.stringify(log.filter((e) => e.type === "tool/result").map((e) => e.data)).slice(0, 400)}`,
      );
  }

  // user tools: each acknowledged call's turn answered once, the tool's result what it was told
  // to produce (its answer, its error, its timeout), or the bounded end of resets during its runs
  for (const op of history.filter((o) => o.kind === "far-tool")) {
    if (op.outcome !== "ok") continue;
    tally.checked++;
    const tag = String(op.input?.tag);
    const behaviour = String(op.input?.behaviour);
    const finals = log.filter(
      (e) => e.type === "assistant/message" && JSON.stringify(e.data.content).includes(`tooled ${tag}"`),
    );
    if (finals.length !== 1) {
      flag(
        finals.length === 0 ? "lost" : "duplicated",
        `tool message ${tag} answered ${finals.length} times`,
      );
      continue;
    }
    const call = log.find(
      (e) =>
        e.type === "assistant/message" &&
        (e.data.toolCalls ?? []).some(
          (c: { name: string; args: { tag?: string } }) => c.name === "far_tool" && c.args.tag === tag,
        ),
    );
    const callId = (call?.data.toolCalls ?? []).find((c: { name: string }) => c.name === "far_tool")?.id;
    // tool call ids repeat across turns: the call's results lie between it and its turn's answer
    const results = log.filter(
      (e) =>
        e.type === "tool/result" &&
        e.data.toolCallId === callId &&
        call !== undefined &&
        e.seq > call.seq &&
        e.seq < finals[0]!.seq,
    );
    const text = results
      .map((e) => (e.data.content as { text: string }[]).map((b) => b.text).join(""))
      .join("|");
    const expected =
      behaviour === "answer"
        ? `tool ${tag}`
        : behaviour === "throw"
          ? `Error: tool failed ${tag}`
          : `Error: far_tool timed out after ${FAR_TOOL_TIMEOUT_MS} ms`;
    if (results.length === 1 && text === expected) tally.asExpected++;
    else if (results.length === 1 && /ran 3 times|restarted/.test(text) && resets)
      refuse("tool call cut short by a reset during every run");
    else
      flag(
        results.length > 1 ? "duplicated" : "wrong",
        `tool ${tag} (${behaviour}) answered ${JSON.stringify(text).slice(0, 160)}`,
      );
  }

  // the MCP server face: each answered call's text is its child's, once
  for (const op of history.filter((o) => o.kind === "far-face")) {
    if (op.outcome !== "ok") continue;
    tally.checked++;
    const tag = String(op.input?.tag);
    const text = String(op.result?.text ?? "");
    const ends = log.filter(
      (e) =>
        e.type === "subagent/end" &&
        JSON.stringify(e.data.lastAssistantMessage ?? "").includes(`face ${tag}"`),
    );
    if (op.result?.isError !== true && text.includes(`echo: face ${tag}`) && ends.length === 1)
      tally.asExpected++;
    else if (op.result?.isError === true && resets)
      refuse("MCP face call cut short by a reset of its session");
    else
      flag(
        ends.length > 1 ? "duplicated" : "wrong",
        `face call ${tag} answered ${JSON.stringify(text).slice(0, 120)} (${ends.length} ends)`,
      );
  }

  // nothing left owed: no open turn, no pending message, no live outbox row, no unsettled transport
  const owed = await sqlOf<{ what: string }>(
    root,
    `SELECT 'outbox ' || id AS what FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL
     UNION ALL SELECT 'inbox ' || message_id FROM inbox WHERE state = 'pending'
     UNION ALL SELECT 'remote run ' || run_id || ' in ' || phase FROM remote_runs WHERE phase != 'done'`,
  );
  for (const { what } of owed) flag("stuck", `${what} is still owed`);
}

function seedList(): number[] {
  const one = inject("farSideSeed");
  if (one) return one.split(",").map(Number);
  const count = Number(inject("farSideSeeds") || 30);
  return Array.from({ length: count }, (_, i) => 1001 + i);
}

/** Registers one test per far-side seed, then the check that every network path was faulted. */
export function defineFarSideCampaign(): void {
  const seeds = seedList();
  const firedAt = new Map<string, number>();
  let net: FaultyNet;
  let remote: ReturnType<typeof installRemoteNet>;
  let acp: ReturnType<typeof installAcpAgent>;
  beforeAll(async () => {
    remote = installRemoteNet();
    acp = installAcpAgent();
    net = new FaultyNet(testEnv.TEST_MCP_URL);
    const put = (name: string, body: Record<string, unknown>) =>
      new Runner(0, []).call("provider", name, "PUT", `/v1/providers/${name}`, body);
    await put(PROVIDER_NAMES.remote, { kind: "remote", url: REMOTE_URL, token: "test-admin-token" });
    // the A2A face's card names PUBLIC_URL's origin, where an A2A provider must be registered
    await put(PROVIDER_NAMES.a2a, { kind: "a2a", url: "https://parent.test", token: "test-admin-token" });
    await put(PROVIDER_NAMES.acp, { kind: "acp", url: "wss://load.acp.test/acp", token: ACP_TOKEN });
  });
  afterAll(() => {
    net.restore();
    acp.restore();
    remote.restore();
  });
  describe("far-side fault campaign", () => {
    test.for(seeds)("far-side seed %i", async (seed, { task }) => {
      const report = await runFarSeed(seed, net);
      task.meta.faultSeed = report;
      for (const fired of report.injected) firedAt.set(fired.point, (firedAt.get(fired.point) ?? 0) + 1);
      expect(
        report.violations.map((v) => `${v.category} ${v.session}: ${v.message}`),
        `far-side seed ${seed}; replay: FAR_SIDE_SEED=${seed} npm run test:faults`,
      ).toEqual([]);
    });
    const whole = !inject("farSideSeed") && !inject("farSideSeeds");
    test.skipIf(!whole)("every network path was faulted at least once", () => {
      expect(FAR_POINTS.filter((point) => !firedAt.has(point))).toEqual([]);
    });
  });
}
