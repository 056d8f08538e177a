import { describe, expect, inject, it } from "vitest";
import {
  createSession,
  putProvider,
  sendMessage,
  startOneShot,
  uniqueName,
  waitForRun,
} from "../../support/api";
import { eventually, waitForTurnEnds } from "../../support/logs";
import { outboxOf } from "../../support/objects";
import { script } from "../../support/scripts";

/**
 * Every fetch the runtime makes to a caller-set URL (a remote provider, an A2A provider's card and
 * endpoint, a session's MCP servers, a callback) follows a redirect only on the same origin
 * (README, Security and limits: "Outbound requests the runtime makes for its callers"): a 30x to another origin
 * is a failure, and that origin never sees a request, least of all one with our token or signed
 * body. `home` (test/setup/outbound-traps.ts) answers `/redirect/<status>/<nonce>/...` with a
 * redirect to `trap`, which records whatever reaches it.
 */

const traps = inject("outboundTraps");
const TOKEN = "a-token-that-must-stay-home";
const NOT_FOLLOWED = (status: number) =>
  new RegExp(
    `redirected \\(HTTP ${status}\\) to another origin \\(${traps.trap.replace(/\./g, "\\.")}\\): not followed`,
  );

interface Hit {
  method: string;
  path: string;
  authorization: string | null;
  body: string;
}

async function hitsOf(base: string, nonce: string): Promise<Hit[]> {
  return (await (await fetch(`${base}/__hits?nonce=${nonce}`)).json()) as Hit[];
}

function redirecting(status: number): { nonce: string; url: string } {
  const nonce = crypto.randomUUID();
  return { nonce, url: `${traps.home}/redirect/${status}/${nonce}` };
}

async function runOn(kind: "remote" | "a2a", url: string) {
  const provider = uniqueName(kind);
  expect((await putProvider(provider, { kind, url, token: TOKEN })).status).toBe(201);
  const parent = await createSession();
  const { runId } = await startOneShot(parent.id, { provider, prompt: "hello" });
  // a refusal is final: the run ends at once, not after retries up to the 600 s deadline
  return waitForRun(parent.id, runId, 5_000);
}

describe("a redirect to another origin is not followed, and that origin sees nothing", () => {
  it("a remote provider whose deployment answers 307 elsewhere: the run ends error, no token leaves", async () => {
    const { nonce, url } = redirecting(307);
    const run = await runOn("remote", url);
    expect(run.result).toMatchObject({ output: [], stopReason: "error" });
    expect(run.result.diagnostic).toMatch(NOT_FOLLOWED(307));
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
    const home = await hitsOf(traps.home, nonce);
    expect(home.map((h) => [h.method, h.path.replace(nonce, "<nonce>"), h.authorization])).toEqual([
      ["POST", "/redirect/307/<nonce>/v1/sessions", `Bearer ${TOKEN}`],
    ]);
  });

  it("an A2A provider whose card URL answers 302 elsewhere: the run ends error, no token leaves", async () => {
    const { nonce, url } = redirecting(302);
    const run = await runOn("a2a", url);
    expect(run.result).toMatchObject({ output: [], stopReason: "error" });
    expect(run.result.diagnostic).toMatch(NOT_FOLLOWED(302));
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
    expect((await hitsOf(traps.home, nonce)).map((h) => h.method)).toEqual(["GET"]);
  });

  it("an MCP server that answers initialize with 302 elsewhere offers no tools; the turn goes on", async () => {
    const { nonce, url } = redirecting(302);
    const { id } = await createSession({ mcpServers: [{ name: "trap", url: `${url}/mcp`, token: TOKEN }] });
    await sendMessage(id, script({ say: "no tools from there" }));
    const log = await waitForTurnEnds(id, 1);
    expect(log.at(-1)!.data).toMatchObject({ reason: "completed" });
    const home = await eventually(
      () => hitsOf(traps.home, nonce),
      (hits) => hits.length > 0,
      { what: "the MCP client's first request" },
    );
    expect(home[0]).toMatchObject({ method: "POST", authorization: `Bearer ${TOKEN}` });
    expect(home[0]!.body).toContain('"initialize"');
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
  });

  it("a callback URL that answers 307 elsewhere: the attempt fails, the signed result goes nowhere else", async () => {
    const { nonce, url } = redirecting(307);
    const { id } = await createSession({
      callback: { url: `${url}/cb`, secret: "a-callback-secret-of-enough-length" },
    });
    await sendMessage(id, script({ say: "the result" }));
    await waitForTurnEnds(id, 1);
    const [row] = await eventually(
      () => outboxOf(id),
      (rows) => rows.some((r) => r.attempts >= 1 && r.last_error !== null),
      { what: "a failed callback attempt" },
    );
    expect(row).toMatchObject({ kind: "callback", delivered_at: null });
    expect(row!.last_error).toMatch(NOT_FOLLOWED(307));
    const home = await hitsOf(traps.home, nonce);
    expect(home.length).toBeGreaterThan(0);
    expect(home[0]!.body).toContain("the result");
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
  });
});
