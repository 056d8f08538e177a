// Delegation measurements: spawn-to-result of a scripted one-shot child (over the API and through
// the model's own `subagent` tool) and fan-out of many children, each beside its raw Durable
// Object floor (bench/worker/bench-routes.ts) and the peer (the same delegation with the Agents
// SDK, bench/peer/) in interleaved rounds, so that a ratio compares samples taken under the same
// background load. Every loop is bounded in count and in time.
import { textOf } from "./client.mjs";
import { summarize } from "./stats.mjs";

/** The trivial child: the scripted model answers "echo: hi" in one step. */
const PROMPT = "hi";
const ANSWER = `echo: ${PROMPT}`;
/** A long-poll asks for the most the API allows; the request itself may take a little longer. */
const LONG_POLL_MS = 30_000;

const start = (client, parentId) =>
  client.call("POST", `/v1/sessions/${parentId}/subagents`, {
    provider: "spawn",
    prompt: PROMPT,
    mode: "one-shot",
  });

/**
 * Long-polls `GET /v1/sessions/:id/runs/:runId?wait=30000` until the run is settled (at most
 * `deadline`); resolves with the view. A settled run that is not the trivial child's answer is
 * an error: the benchmark would be timing something else.
 */
async function settled(client, parentId, runId, deadline) {
  for (;;) {
    const path = `/v1/sessions/${parentId}/runs/${runId}?wait=${LONG_POLL_MS}`;
    const { status, body } = await client.call("GET", path, undefined, undefined, LONG_POLL_MS + 5_000);
    if (status !== 200) throw new Error(`GET ${path}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
    if (body.state === "settled") {
      const result = body.result;
      if (result?.stopReason !== "completed" || textOf({ data: { content: result.output } }) !== ANSWER)
        throw new Error(`run ${runId} settled with ${JSON.stringify(result).slice(0, 300)}`);
      return body;
    }
    if (performance.now() >= deadline) throw new Error(`run ${runId} not settled in time`);
  }
}

/** POST .../subagents until its 201; other answers are counted by status and retried (bounded). */
async function started(client, parentId, refusals, deadline) {
  for (;;) {
    const { status, body } = await start(client, parentId);
    if (status === 201) return body;
    refusals.set(status, (refusals.get(status) ?? 0) + 1);
    if (performance.now() >= deadline || status < 500)
      throw new Error(`POST /v1/sessions/${parentId}/subagents: ${status} ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * One spawn to result: `POST /v1/sessions/:parentId/subagents` (the trivial one-shot child) until
 * its 201 (refused starts counted by status in `refusals` and retried), then its run long-polled
 * until settled with the child's answer; bounded by `deadline`. Resolves with the ms from the POST
 * to the settled answer (`total`), to the 201 (`accepted`) and from the 201 on (`settle`).
 */
export async function spawnToResult(client, parentId, refusals, deadline) {
  const t0 = performance.now();
  const run = await started(client, parentId, refusals, deadline);
  const t1 = performance.now();
  await settled(client, parentId, run.runId, deadline);
  const t2 = performance.now();
  return { total: t2 - t0, accepted: t1 - t0, settle: t2 - t1 };
}

/**
 * Spawn-to-result over the API beside the spawn floor, interleaved round by round (the order
 * alternates each round). Runtime: POST /v1/sessions/:id/subagents {"provider":"spawn",
 * "prompt":"hi","mode":"one-shot"} -> 201 {runId,id}, then long-poll the run until settled;
 * timed from the POST to the settled answer, round-robin over `parents` parent sessions, with
 * the admin token (the floor route has no rate limiter either). Floor: POST /bench/floor/spawn
 * on as many floor parents.
 */
export async function spawnRounds(admin, { n, warmup, parents, budgetMs, peer }) {
  const sessions = [];
  for (let k = 0; k < parents; k++) sessions.push(await admin.createSession({ label: `bench-spawn-${k}` }));
  const samples = { floor: [], spawn: [], accepted: [], settle: [], peer: [], peerTool: [] };
  const refusals = new Map();
  const deadline = performance.now() + budgetMs;
  for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
    const keep = i >= warmup;
    const k = i % parents;
    const floor = async () => {
      const t0 = performance.now();
      await admin.call("POST", `/bench/floor/spawn?key=spawn-parent-${k}`, undefined, 200);
      if (keep) samples.floor.push(performance.now() - t0);
    };
    const spawn = async () => {
      const { total, accepted, settle } = await spawnToResult(
        admin,
        sessions[k].id,
        refusals,
        deadline + 30_000,
      );
      if (!keep) return;
      samples.spawn.push(total);
      samples.accepted.push(accepted);
      samples.settle.push(settle);
    };
    // the peer (the Agents SDK: a brand-new agent started with getAgentByName and called) in the same rounds
    const peerSpawn = async () => {
      if (!peer) return;
      const t0 = performance.now();
      const { body } = await peer.call("POST", `/peer/spawn?key=spawn-parent-${k}`, undefined, 200);
      if (body.answer !== "done: x") throw new Error(`the peer answered ${JSON.stringify(body)}`);
      if (keep) samples.peer.push(performance.now() - t0);
    };
    // the peer's agent tool (`runAgentTool`): a brand-new chat sub-agent runs one echo turn and
    // its answer comes back, the work of spawn -> result
    const peerTool = async () => {
      if (!peer) return;
      const t0 = performance.now();
      const { body } = await peer.call("POST", `/peer/tool?key=tool-parent-${k}`, undefined, 200, 30_000);
      if (body.answer !== `echo: ${PROMPT}`)
        throw new Error(`the peer's agent tool answered ${JSON.stringify(body)}`);
      if (keep) samples.peerTool.push(performance.now() - t0);
    };
    const order = [floor, spawn, peerSpawn, peerTool];
    for (let j = 0; j < order.length; j++) await order[(i + j) % order.length]();
  }
  return {
    ...Object.fromEntries(Object.entries(samples).map(([key, list]) => [key, summarize(list)])),
    parents,
    refusals: Object.fromEntries(refusals),
  };
}

/**
 * Spawn-to-result driven by the parent's model: a message whose script calls the `subagent`
 * tool once (foreground) and then answers, timed from the send to that answer on the parent's
 * event stream; beside the echo message-to-answer on other sessions in the same rounds (the order
 * alternates). The extra cost of the delegation is tool minus echo, per round (paired) and as a
 * difference of medians.
 */
export async function toolRounds(admin, { n, warmup, parents, budgetMs }) {
  const open = async (label) => {
    const created = await admin.createSession({ label });
    return { id: created.id, stream: await admin.openStream(created.id, -1) };
  };
  const tool = [];
  const echo = [];
  const samples = { tool: [], echo: [], extra: [] };
  try {
    for (let k = 0; k < parents; k++) tool.push(await open(`bench-tool-${k}`));
    for (let k = 0; k < parents; k++) echo.push(await open(`bench-tool-echo-${k}`));
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < warmup + n && performance.now() < deadline; i++) {
      const k = i % parents;
      const answer = `done ${i}`;
      const script = JSON.stringify({
        script: [
          { call: [{ tool: "subagent", args: { description: "d", prompt: PROMPT } }] },
          { say: answer },
        ],
      });
      const echoText = `tool bench echo ${i}`;
      const timeTool = async () => {
        const t0 = performance.now();
        await admin.send(tool[k].id, script);
        await tool[k].stream.next(
          (e) => e.type === "assistant/message" && textOf(e) === answer && !e.data.toolCalls?.length,
          30_000,
        );
        return performance.now() - t0;
      };
      const timeEcho = async () => {
        const t0 = performance.now();
        await admin.send(echo[k].id, echoText);
        await echo[k].stream.next(
          (e) => e.type === "assistant/message" && textOf(e) === `echo: ${echoText}`,
          30_000,
        );
        return performance.now() - t0;
      };
      let t;
      let e;
      if (i % 2 === 0) {
        e = await timeEcho();
        t = await timeTool();
      } else {
        t = await timeTool();
        e = await timeEcho();
      }
      if (i < warmup) continue;
      samples.tool.push(t);
      samples.echo.push(e);
      samples.extra.push(t - e);
    }
  } finally {
    for (const s of [...tool, ...echo]) s.stream.close();
  }
  const summary = Object.fromEntries(Object.entries(samples).map(([key, list]) => [key, summarize(list)]));
  return { ...summary, medianDifference: summary.tool.p50 - summary.echo.p50, parents };
}

/**
 * Fan-out beside its floor, interleaved (the order alternates each round). Runtime: a fresh
 * parent session per round; `children` concurrent POST .../subagents, then every run long-polled
 * at once until all results are in; timed from the first POST to the last settled answer, and
 * the starts alone (first POST to last 201). Floor: POST /bench/floor/fanout?n=<children>.
 */
export async function fanoutRounds(admin, { children, rounds, warmup, budgetMs, peer }) {
  const samples = { floor: [], total: [], starts: [], peer: [] };
  const refusals = new Map();
  const deadline = performance.now() + budgetMs;
  for (let r = 0; r < warmup + rounds && performance.now() < deadline; r++) {
    const keep = r >= warmup;
    const floor = async () => {
      const t0 = performance.now();
      const { body } = await admin.call(
        "POST",
        `/bench/floor/fanout?key=fanout-parent&n=${children}`,
        undefined,
        200,
        60_000,
      );
      if (body.children !== children) throw new Error(`floor fan-out answered ${JSON.stringify(body)}`);
      if (keep) samples.floor.push(performance.now() - t0);
    };
    const fanout = async () => {
      const parent = (await admin.createSession({ label: `bench-fanout-${r}` })).id;
      const t0 = performance.now();
      const runs = await Promise.all(
        Array.from({ length: children }, () => started(admin, parent, refusals, deadline + 30_000)),
      );
      const t1 = performance.now();
      await Promise.all(runs.map((run) => settled(admin, parent, run.runId, deadline + 30_000)));
      const t2 = performance.now();
      if (!keep) return;
      samples.total.push(t2 - t0);
      samples.starts.push(t1 - t0);
    };
    const peerFanout = async () => {
      if (!peer) return;
      const t0 = performance.now();
      const { body } = await peer.call(
        "POST",
        `/peer/fanout?key=fanout-parent-${r}&n=${children}`,
        undefined,
        200,
        60_000,
      );
      if (body.children !== children) throw new Error(`the peer's fan-out answered ${JSON.stringify(body)}`);
      if (keep) samples.peer.push(performance.now() - t0);
    };
    const order = [floor, fanout, peerFanout];
    for (let j = 0; j < order.length; j++) await order[(r + j) % order.length]();
  }
  const perChild = (list) => summarize(list.map((t) => t / children));
  return {
    children,
    floor: summarize(samples.floor),
    floorPerChild: perChild(samples.floor),
    total: summarize(samples.total),
    perChild: perChild(samples.total),
    starts: summarize(samples.starts),
    peerPerChild: perChild(samples.peer),
    refusals: Object.fromEntries(refusals),
  };
}
