import { evictDurableObject } from "cloudflare:test";
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { installAcpAgent } from "../support/acp-agent";
import { installRemoteNet, REMOTE_URL } from "../support/remote";
import { checkFarSide, type FarFigures } from "./far-side-checker";
import { FaultyNet } from "./far-side-net";
import { detailOf, readSnapshot, shoutsServed } from "./far-side-snapshot";
import { FAR_POINTS, type FarStep, generateFarSide, PROVIDER_NAMES } from "./far-side-plan";
import { ADMIN, allObjects, type Op, restoreClock, Runner, sleep, sqlOf } from "./harness";
import type { SeedReport } from "./summary";
import { FAR_TOOL_TIMEOUT_MS } from "./worker";

/**
 * The fault campaign's out-of-process half: a session delegates through every provider kind that
 * leaves the object (a remote deployment with signed callbacks, an A2A agent, an ACP agent over a
 * WebSocket) and calls a real MCP server's tools, while the network between them fails on a
 * seeded schedule (far-side-plan.ts, far-side-net.ts) and the parent is reset mid-run. The far
 * sides are real: the remote deployment and the A2A agent are this Worker itself behind a
 * loopback network (test/support/remote.ts; the A2A face is served by the SDK's handlers), the
 * ACP agent is the ACP SDK's agent side (test/support/acp-agent.ts), the MCP server is the MCP
 * SDK's (test/setup/mcp-server.ts), and the user tool is the campaign Worker's own
 * (test/faults/worker.ts: it answers, throws or hangs past its timeout, as the step tells it), and
 * the MCP SDK's client calls the session's own MCP server face (a foreground `subagent` call)
 * through the same faulty network.
 *
 * This file drives a seed and reads what the sessions hold; far-side-checker.ts compares that
 * with the ledger, and accepts an outcome other than the scripted one only when a fault on that
 * operation's own path, or a reset that took effect, while it ran explains it.
 *
 *   FAR_SIDE_SEEDS=30 (default)   FAR_SIDE_SEED=1003 replays one seed (far-side seeds start at 1001)
 */

declare module "vitest" {
  export interface ProvidedContext {
    farSideSeeds: string;
    farSideSeed: string;
  }
}

const ACP_TOKEN = "acp-secret-token-0123456789";
/** The test MCP server (vitest.config.ts binds it for the tests only). */
const testEnv = env as unknown as { TEST_MCP_URL: string; TEST_MCP_TOKEN: string };
/** How long an eviction may wait for the work in flight before it is left to finish on its own. */
const EVICT_WAIT_MS = 1_500;

/** A seed's report, with the far operations' own figures under `far`. */
export type FarSeedReport = SeedReport & { far: FarFigures };

const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

function textOfContent(content: unknown): string {
  return ((content as { text?: string }[] | undefined) ?? []).map((c) => c.text ?? "").join("");
}

/** A seed's driver: the runner's history, and the evictions still finishing after their step. */
interface Drive {
  runner: Runner;
  root: string;
  evictions: Promise<unknown>[];
}

async function runFarSeed(seed: number, net: FaultyNet): Promise<FarSeedReport> {
  const t0 = performance.now();
  const scenario = generateFarSide(seed);
  const before = new Set((await allObjects()).map((o) => o.toString()));
  const objects = async (): Promise<DurableObjectId[]> =>
    (await allObjects()).filter((o) => !before.has(o.toString()));
  const runner = new Runner(seed, []);
  try {
    const created = await runner.call("create", "r0", "POST", "/v1/sessions", {
      label: `far side seed ${seed}`,
      mcpServers: [{ name: "tools", url: testEnv.TEST_MCP_URL, token: testEnv.TEST_MCP_TOKEN }],
    });
    if (created.outcome !== "ok") throw new Error(`the root could not be created: ${created.status}`);
    const drive: Drive = { runner, root: String(created.result?.id), evictions: [] };
    runner.bind("r0", drive.root);
    const shoutsBefore = await shoutsServed(net);
    net.arm(scenario.rules);
    const t1 = performance.now();
    for (const step of scenario.steps) await execute(drive, step);
    const t2 = performance.now();
    const quiesced = await drainAll(drive, objects);
    const t3 = performance.now();
    const snap = await readSnapshot(drive.root, objects, (await shoutsServed(net)) - shoutsBefore);
    const { violations, answers, far } = checkFarSide(runner.history, net.faults, snap, {
      toolTimeoutMs: FAR_TOOL_TIMEOUT_MS,
    });
    if (!quiesced) violations.push({ category: "stuck", session: "*", message: "the drain never quiesced" });
    const replay = inject("farSideSeed") !== "";
    return {
      ...(violations.length > 0 || replay
        ? { detail: detailOf(scenario, net.faults, runner.history, snap) }
        : {}),
      seed,
      ms: Math.round(performance.now() - t0),
      ops: runner.history.map((o) => ({ kind: o.kind, outcome: o.outcome })),
      injected: [...net.fired, ...runner.fired],
      pointHits: { ...net.hits },
      violations,
      answers,
      far,
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

/** Drains the seed's objects until nothing moves; true when they quiesced. */
async function drainAll(drive: Drive, objects: () => Promise<DurableObjectId[]>): Promise<boolean> {
  const { runner, root } = drive;
  // short steps of the mocked clock: a far side that failed a few calls is retried well
  // before the 600 s deadline, as it would be in real time
  let quiesced = await runner.drain(objects, () => [root], { stepMs: 20_000 });
  // an ACP agent that could not be reached is tried again on a real-time backoff (seconds, in
  // the object's memory): give those runs the time, then drain what they started
  if (await waitForRuns(root, 10_000))
    quiesced = (await runner.drain(objects, () => [root], { stepMs: 20_000 })) && quiesced;
  await runner.settle();
  // an eviction left to finish takes effect (or not) before the check reads when it did
  await Promise.race([Promise.allSettled(drive.evictions), sleep(5_000)]);
  return quiesced;
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

/** A message to the root whose scripted turn calls `tool` once, then says `final`. */
function callingMessage(
  drive: Drive,
  kind: string,
  tool: string,
  args: object,
  final: string,
  input: object,
) {
  return drive.runner.call(
    kind,
    "r0",
    "POST",
    `/v1/sessions/${drive.root}/messages`,
    { content: script({ call: [{ tool, args }] }, { say: final }) },
    { ...input },
  );
}

async function execute(drive: Drive, step: FarStep): Promise<void> {
  const { runner, root } = drive;
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
      await callingMessage(
        drive,
        "far-mcp",
        "mcp__tools__shout",
        { text: `mcp ${step.tag}` },
        `shouted ${step.tag}`,
        step,
      );
      return;
    case "tool":
      await callingMessage(
        drive,
        "far-tool",
        "far_tool",
        { tag: step.tag, behaviour: step.behaviour },
        `tooled ${step.tag}`,
        step,
      );
      return;
    case "face":
      await callFace(drive, step.tag);
      return;
    case "abort":
      await abortRoot(drive);
      return;
    case "evict":
      await evictRoot(drive);
      return;
    case "pause":
      await sleep(step.ms);
      return;
  }
}

/**
 * An MCP client (the MCP SDK's own) on the session's MCP server face, through the faulty network
 * (FaultyNet routes face.test to this Worker): a foreground subagent call, whose answer is the
 * child's.
 */
async function callFace(drive: Drive, tag: string): Promise<void> {
  const op: Op = drive.runner.record("far-face", "r0", performance.now(), "ambiguous");
  op.input = { op: "face", tag };
  try {
    const client = new McpClient({ name: "far-side campaign", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(
      new URL(`https://face.test/v1/sessions/${drive.root}/mcp`),
      {
        fetch: (input, init) => globalThis.fetch(input, init),
        requestInit: { headers: { authorization: `Bearer ${ADMIN}` } },
      },
    );
    await client.connect(transport);
    const result = await client.callTool({
      name: "subagent",
      arguments: { description: `face ${tag}`, prompt: `face ${tag}` },
    });
    op.outcome = "ok";
    op.result = { text: textOfContent(result.content), isError: result.isError === true };
    await client.close().catch(() => {});
  } catch (error) {
    op.outcome = "fail";
    op.code = String(error).slice(0, 80);
  }
  op.end = performance.now();
}

/** Stamps when a reset took effect, on the history's clock and on the events' clock. */
function tookEffect(op: Op, extra: Record<string, unknown> = {}): void {
  op.result = { ...op.result, ...extra, effectAt: performance.now(), effectClock: Date.now() };
}

/** Resets the root at once (`ctx.abort()`); the history records whether and when it took effect. */
async function abortRoot(drive: Drive): Promise<void> {
  const start = performance.now();
  const outcome = await drive.runner.abort(drive.root);
  const op = drive.runner.record("abort", "r0", start, outcome === "aborted" ? "ok" : "ambiguous", {
    outcome,
  });
  if (outcome === "aborted") {
    tookEffect(op);
    drive.runner.fired.push({ kind: "abort", point: "mid-flight", scope: "r0" });
  }
}

/**
 * Evicts the root gracefully. An instance with work in flight is evicted once that work is done:
 * the step waits `EVICT_WAIT_MS`, then leaves it to finish, and the history records when (and
 * whether) the eviction took effect, whenever that is. An instance not running is not reset.
 */
async function evictRoot(drive: Drive): Promise<void> {
  const { runner } = drive;
  const op = runner.record("evict", "r0", performance.now(), "ok", { outcome: "busy" });
  const attempt = evictDurableObject(env.SESSIONS.get(env.SESSIONS.idFromName(drive.root))).then(
    () => {
      tookEffect(op, { evicted: true });
      runner.fired.push({ kind: "evict", point: "between-ops", scope: "r0" });
      return "evicted" as const;
    },
    (error: unknown) => {
      if (!String(error).includes("not currently running"))
        runner.notes.push(`evict r0: ${String(error).slice(0, 120)}`);
      return "not-running" as const;
    },
  );
  const outcome = await Promise.race([attempt, sleep(EVICT_WAIT_MS).then(() => "busy" as const)]);
  op.result = { ...op.result, outcome };
  op.end = performance.now();
  if (outcome === "busy") {
    runner.evictBusy++;
    drive.evictions.push(attempt);
  }
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
