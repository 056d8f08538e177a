import { describe, expect, it } from "vitest";
import { CallbackSpec, ServiceUrl } from "../../../src/contract/wire";
import {
  callbackUrl,
  foldEvents,
  isPermanent,
  localResult,
  newCallbackSecret,
  pollDelayMs,
  REPLAY_WINDOW_SECONDS,
  scrub,
  signCallback,
  transportResult,
  verifyCallback,
} from "../../../src/providers/remote-protocol";

/** The pure parts of remote delegation: signing and checking callbacks, result mapping, polling folds. */

const SECRET = "s3cr3t-per-run-callback-secret-value";
const BODY = JSON.stringify({ v: 1, session: "x", result: { output: [], stopReason: "completed" } });
const NOW = 1_800_000_000_000;
const at = (offsetSeconds: number) => Math.floor(NOW / 1000) + offsetSeconds;

async function check(overrides: Partial<Parameters<typeof verifyCallback>[0]> & { ts?: number } = {}) {
  const ts = overrides.ts ?? at(0);
  const signature =
    overrides.signature === undefined ? await signCallback(SECRET, ts, BODY) : overrides.signature;
  return verifyCallback({
    secret: overrides.secret ?? SECRET,
    timestamp: overrides.timestamp === undefined ? String(ts) : overrides.timestamp,
    signature,
    body: overrides.body ?? BODY,
    nowMs: overrides.nowMs ?? NOW,
  });
}

describe("callback signatures (semantics.md §12.3)", () => {
  it("accepts its own signature within the replay window, either side of the clock", async () => {
    expect(await check()).toBe("ok");
    expect(await check({ ts: at(-REPLAY_WINDOW_SECONDS) })).toBe("ok");
    expect(await check({ ts: at(REPLAY_WINDOW_SECONDS) })).toBe("ok");
    expect(await signCallback(SECRET, at(0), BODY)).toMatch(/^v1=[0-9a-f]{64}$/);
  });

  it("refuses a timestamp outside the five-minute window as stale, even when correctly signed", async () => {
    expect(await check({ ts: at(-REPLAY_WINDOW_SECONDS - 1) })).toBe("stale");
    expect(await check({ ts: at(REPLAY_WINDOW_SECONDS + 1) })).toBe("stale");
    expect(await check({ ts: at(-86_400) })).toBe("stale");
  });

  it("refuses another secret, a changed body, a changed timestamp and a forged mac", async () => {
    expect(await check({ secret: `${SECRET}x` })).toBe("bad-signature");
    expect(await check({ body: BODY.replace("completed", "error") })).toBe("bad-signature");
    expect(await check({ body: `${BODY} ` })).toBe("bad-signature");
    const signed = await signCallback(SECRET, at(0), BODY);
    expect(await check({ signature: signed, timestamp: String(at(1)) })).toBe("bad-signature");
    expect(await check({ signature: `v1=${"0".repeat(64)}` })).toBe("bad-signature");
    const flipped = signed.slice(0, -1) + (signed.endsWith("0") ? "1" : "0");
    expect(await check({ signature: flipped })).toBe("bad-signature");
  });

  it("refuses missing or malformed headers before any crypto", async () => {
    expect(await check({ signature: null })).toBe("malformed");
    expect(await check({ timestamp: null })).toBe("malformed");
    expect(await check({ timestamp: "soon" })).toBe("malformed");
    expect(await check({ timestamp: "-5" })).toBe("malformed");
    expect(await check({ timestamp: "1e9" })).toBe("malformed");
    expect(await check({ signature: "sha256=abc" })).toBe("malformed");
    expect(await check({ signature: `v1=${"G".repeat(64)}` })).toBe("malformed");
    expect(await check({ signature: `v1=${"0".repeat(63)}` })).toBe("malformed");
  });

  it("mints distinct url-safe secrets and the parent's callback url", () => {
    const secrets = new Set(Array.from({ length: 50 }, newCallbackSecret));
    expect(secrets.size).toBe(50);
    for (const s of secrets) expect(s).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(callbackUrl("https://a.example/", "p", "r")).toBe("https://a.example/v1/callbacks/p/r");
  });
});

describe("service urls", () => {
  it("allow https anywhere and plain http only to loopback hosts", () => {
    for (const ok of [
      "https://b.example.com",
      "https://b.example.com/base",
      "http://127.0.0.1:8788",
      "http://localhost:9000",
      "http://[::1]:8787",
    ])
      expect(ServiceUrl.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["http://b.example.com", "http://10.0.0.1", "ftp://x.io", "a b c", "javascript:x()"])
      expect(ServiceUrl.safeParse(bad).success, bad).toBe(false);
    expect(CallbackSpec.safeParse({ url: "https://a.example", secret: "short" }).success).toBe(false);
    expect(CallbackSpec.safeParse({ url: "https://a.example", secret: SECRET, extra: 1 }).success).toBe(
      false,
    );
  });
});

describe("results from another deployment (semantics.md §3.2, §12.1)", () => {
  it("keeps known stop reasons, reads unknown ones as error and caps and scrubs the diagnostic", () => {
    expect(
      localResult(
        { output: [{ type: "text", text: "42" }], stopReason: "completed" },
        { cancelled: false, secrets: [] },
      ),
    ).toEqual({ output: [{ type: "text", text: "42" }], stopReason: "completed" });
    expect(localResult({ output: [], stopReason: "exploded" }, { cancelled: false, secrets: [] })).toEqual({
      output: [],
      stopReason: "error",
      diagnostic: "the remote ended with stop reason exploded",
    });
    const leaky = localResult(
      { output: [], stopReason: "error", diagnostic: `bad token tok-123456 ${"x".repeat(10_000)}` },
      { cancelled: false, secrets: ["tok-123456"] },
    );
    expect(leaky.diagnostic).not.toContain("tok-123456");
    expect(leaky.diagnostic).toContain("[redacted]");
    expect(new TextEncoder().encode(leaky.diagnostic).byteLength).toBeLessThanOrEqual(4096);
    expect(leaky.diagnostic).toMatch(/diagnostic truncated\]$/);
  });

  it("after a local cancellation anything is aborted, output kept, structured dropped", () => {
    expect(
      localResult(
        { output: [{ type: "text", text: "half" }], structured: { a: 1 }, stopReason: "completed" },
        { cancelled: true, secrets: [] },
      ),
    ).toEqual({
      output: [{ type: "text", text: "half" }],
      stopReason: "aborted",
      diagnostic: "the run was cancelled by its parent",
    });
  });

  it("transport failures are error or aborted results with a bounded, scrubbed diagnostic and no output", () => {
    expect(transportResult("error", "HTTP 401 for token abcd-secret", ["abcd-secret"])).toEqual({
      output: [],
      stopReason: "error",
      diagnostic: "HTTP 401 for token [redacted]",
    });
    expect(scrub("a wxyz b wxyz no", ["wxyz", "no"])).toBe("a [redacted] b [redacted] no"); // too short to scrub: "no"
  });

  it("folds polled pages into the first turn's result, the same way the remote reports it", () => {
    const say = (seq: number, text: string) => ({
      seq,
      type: "assistant/message",
      data: { content: text ? [{ type: "text", text }] : [], stopReason: "end", model: "scripted" },
    });
    let folded = foldEvents(
      { cursor: -1, output: null },
      {
        events: [
          { seq: 0, type: "agent/inbox/inserted", data: {} },
          { seq: 1, type: "turn/start", data: { turn: 1 } },
          say(2, "partial"),
        ],
        next: null,
      },
    );
    expect(folded.result).toBeUndefined();
    expect(folded.state).toEqual({ cursor: 2, output: [{ type: "text", text: "partial" }] });
    // a replayed page changes nothing; an empty answer does not replace the last non-empty one
    folded = foldEvents(folded.state, {
      events: [
        say(2, "partial"),
        say(3, ""),
        { seq: 4, type: "turn/end", data: { turn: 1, reason: "error", error: "boom" } },
      ],
      next: null,
    });
    expect(folded.result).toEqual({
      output: [{ type: "text", text: "partial" }],
      stopReason: "error",
      diagnostic: "boom",
    });
    const max = foldEvents(
      { cursor: -1, output: null },
      { events: [{ seq: 0, type: "turn/end", data: { turn: 1, reason: "max-tokens" } }], next: null },
    );
    expect(max.result).toEqual({ output: [], stopReason: "max-tokens" });
  });

  it("retries only what a retry can change and backs polls off to 30 s", () => {
    for (const status of [400, 401, 403, 404, 413, 422])
      expect(isPermanent(status), String(status)).toBe(true);
    for (const status of [408, 409, 429, 500, 502, 503])
      expect(isPermanent(status), String(status)).toBe(false);
    expect([0, 1, 2, 3, 4, 5, 6, 20].map((polls) => pollDelayMs(polls))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
    // an A2A task (no callback) is polled from 250 ms
    expect([0, 1, 2, 6, 7, 20].map((polls) => pollDelayMs(polls, 250))).toEqual([
      250, 500, 1_000, 16_000, 30_000, 30_000,
    ]);
  });
});
