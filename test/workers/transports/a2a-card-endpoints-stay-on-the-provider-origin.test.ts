import { describe, expect, inject, it } from "vitest";
import { createSession, putProvider, startOneShot, uniqueName, waitForRun } from "../../support/api";
import { allEvents, ofType } from "../../support/logs";
import { transportOf } from "../../support/remote";

/**
 * An A2A agent card is what the agent says about itself, learned at run time: its endpoint must
 * pass the outbound rule and be on the origin the provider was registered with (README, Security and limits
 * "Outbound requests the runtime makes for its callers"). A card that names another endpoint ends
 * the run `error` at once, saying why, and no request (least of all one with the provider's token)
 * reaches that endpoint. The cards come from test/setup/outbound-traps.ts: served by `home`,
 * naming `trap`, which records whatever reaches it.
 */

const traps = inject("outboundTraps");
const TOKEN = "a2a-provider-token-never-elsewhere";

interface Hit {
  method: string;
  path: string;
  authorization: string | null;
}

async function hitsOf(base: string, nonce: string): Promise<Hit[]> {
  return (await (await fetch(`${base}/__hits?nonce=${nonce}`)).json()) as Hit[];
}

async function runWithCard(card: "elsewhere" | "unspecified") {
  const nonce = crypto.randomUUID();
  const provider = uniqueName("a2a-card");
  const put = await putProvider(provider, {
    kind: "a2a",
    url: `${traps.home}/card-${card}/${nonce}`,
    token: TOKEN,
  });
  expect(put.status).toBe(201);
  const parent = await createSession();
  const { runId } = await startOneShot(parent.id, { provider, prompt: "echo: hello" });
  // "at once": a refusal is final, never retried with backoff until the 600 s deadline
  const run = await waitForRun(parent.id, runId, 5_000);
  return { nonce, parent: parent.id, runId, run };
}

describe("an A2A agent card's endpoint stays on the provider's origin", () => {
  it("a card naming an endpoint on another origin ends the run error at once; nothing reaches it", async () => {
    const { nonce, parent, runId, run } = await runWithCard("elsewhere");
    expect(run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic: `the A2A agent did not accept the task: the agent card's endpoint is on another origin (${traps.trap}): not sent`,
    });
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
    // the card itself was read from the provider's origin, once
    expect((await hitsOf(traps.home, nonce)).map((h) => h.method)).toEqual(["GET"]);
    expect(await transportOf(parent, runId)).toMatchObject({ phase: "done", remote_id: null });
    expect(ofType(await allEvents(parent), "subagent/remote")).toEqual([]);
  });

  it("a card naming http://0.0.0.0:<port> (the reported finding) is refused by the rule; nothing reaches it", async () => {
    const { nonce, run } = await runWithCard("unspecified");
    expect(run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic:
        "the A2A agent did not accept the task: the agent card's endpoint must be https (plain http only to a loopback host): not sent",
    });
    expect(await hitsOf(traps.trap, nonce)).toEqual([]);
  });
});
