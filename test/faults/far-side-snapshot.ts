import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { FarSnapshot } from "./far-side-checker";
import type { FarFault, FarScenario } from "./far-side-plan";
import type { FaultyNet } from "./far-side-net";
import { type Op, sqlOf } from "./harness";

/**
 * What the far-side checker reads after a seed's drain, taken from storage: the root's events,
 * runs and debts, the prompts the far sessions (remote, A2A: sessions of this same Worker)
 * received, and the MCP server's own count of the calls it served.
 */

/** The test MCP server (vitest.config.ts binds it for the tests only). */
const testEnv = env as unknown as { TEST_MCP_URL: string };

/** The `shout` calls the test MCP server served so far (its own count, read past the faults). */
export async function shoutsServed(net: FaultyNet): Promise<number> {
  const response = await net.direct(new URL("/__calls", testEnv.TEST_MCP_URL).toString());
  return ((await response.json()) as Record<string, number>).shout ?? 0;
}

/** The tags of the far prompts each session received, one entry per message. */
async function farPromptsOf(object: DurableObjectId): Promise<string[]> {
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
  return users.flatMap(({ data }) => {
    const match = /far (f\d+-\d+)/.exec(JSON.stringify(JSON.parse(data).content));
    return match ? [match[1]!] : [];
  });
}

/**
 * The root's events, runs and debts, the far sessions made for its runs and the prompts they
 * received (by their prompt's tag), and how many calls the MCP server served during the seed.
 */
export async function readSnapshot(
  root: string,
  objects: () => Promise<DurableObjectId[]>,
  mcpServed: number,
): Promise<FarSnapshot> {
  const log = (
    await sqlOf<{ seq: number; type: string; at: number; data: string }>(
      root,
      "SELECT seq, type, at, data FROM events ORDER BY seq",
    )
  ).map((r) => ({ seq: r.seq, type: r.type, at: r.at, data: JSON.parse(r.data) as Record<string, unknown> }));
  const farSessions: Record<string, number> = {};
  const farPrompts: Record<string, number> = {};
  for (const object of await objects()) {
    const tags = await farPromptsOf(object);
    for (const tag of tags) farPrompts[tag] = (farPrompts[tag] ?? 0) + 1;
    for (const tag of new Set(tags)) farSessions[tag] = (farSessions[tag] ?? 0) + 1;
  }
  const runs = await sqlOf<{ run_id: string; state: string; result: string | null }>(
    root,
    "SELECT run_id, state, result FROM runs",
  );
  // nothing left owed: no pending message, no live outbox row, no unfinished transport
  const owed = await sqlOf<{ what: string }>(
    root,
    `SELECT 'outbox ' || id AS what FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL
     UNION ALL SELECT 'inbox ' || message_id FROM inbox WHERE state = 'pending'
     UNION ALL SELECT 'remote run ' || run_id || ' in ' || phase FROM remote_runs WHERE phase != 'done'`,
  );
  return {
    log,
    runs: runs.map((r) => ({ runId: r.run_id, state: r.state, result: r.result })),
    farSessions,
    farPrompts,
    mcpServed,
    owed: owed.map((o) => o.what),
  };
}

/**
 * A seed as text, for test-results/faults/seed-<n>.txt (a failing seed's, or a replayed one's):
 * its steps and rules, the faults as they fired, the history and the root's log, every time on
 * the clock it was taken with (faults and operations: `performance.now()`; events: `Date.now()`).
 */
export function detailOf(
  scenario: FarScenario,
  faults: readonly FarFault[],
  history: readonly Op[],
  snap: FarSnapshot,
): string {
  const lines = [
    `far-side seed ${scenario.seed}`,
    `steps: ${JSON.stringify(scenario.steps)}`,
    `rules: ${JSON.stringify(scenario.rules)}`,
    "faults (at, clock, kind @ point, request):",
    ...faults.map(
      (f) => `  ${Math.round(f.at)} ${f.clock} net-${f.kind} @ ${f.point} ${f.detail.slice(0, 160)}`,
    ),
    "history (start-end, kind, outcome, input, result):",
    ...history.map(
      (o) =>
        `  ${Math.round(o.start)}-${Math.round(o.end)} ${o.kind} ${o.outcome} ${o.status ?? ""} ${JSON.stringify(o.input ?? {}).slice(0, 160)} ${JSON.stringify(o.result ?? {}).slice(0, 200)}`,
    ),
    `mcp calls served: ${snap.mcpServed}; far prompts: ${JSON.stringify(snap.farPrompts)}; owed: ${snap.owed.join(", ")}`,
    "root log (seq, at, type, data):",
    ...snap.log.map((e) => `  ${e.seq} ${e.at} ${e.type} ${JSON.stringify(e.data).slice(0, 240)}`),
    "runs:",
    ...snap.runs.map((r) => `  ${r.runId} ${r.state} ${String(r.result).slice(0, 300)}`),
  ];
  return `${lines.join("\n")}\n`;
}
