import { describe, expect, it } from "vitest";
import { type ModelClient, ModelError, type ModelReply, type ModelRequest } from "../../../src/agent/model";
import {
  type AttemptClaim,
  callModel,
  DEFAULT_MODEL_CALL_POLICY,
  type ModelCallPolicy,
  retryAfterMs,
  retryDelay,
} from "../../../src/agent/model-calls";

/** The model call policy, pure: retries, backoff, Retry-After, timeouts and the attempt budget. */

const REPLY: ModelReply = { content: [{ type: "text", text: "ok" }], toolCalls: [], stopReason: "end" };

function request(signal = new AbortController().signal): ModelRequest {
  return { model: "m", turn: [], history: () => [], tools: [], signal };
}

/** A client that plays `outcomes` in order (an Error is thrown, "hang" never answers). */
function scripted(outcomes: (ModelReply | Error | "hang")[]): { client: ModelClient; calls: number } {
  const state = { calls: 0 };
  return {
    get calls() {
      return state.calls;
    },
    client: {
      async generate() {
        const next = outcomes[state.calls++];
        if (next === undefined) throw new Error("no outcome left");
        if (next === "hang") return new Promise<ModelReply>(() => {});
        if (next instanceof Error) throw next;
        return next;
      },
    },
  };
}

/** A durable budget stand-in: `used` attempts already spent (by earlier activations). */
function budget(attempts: number, used = 0) {
  const state = { used, lastErrors: [] as (string | undefined)[] };
  return {
    state,
    claimAttempt(lastError: string | undefined): AttemptClaim {
      state.lastErrors.push(lastError);
      if (state.used >= attempts) return { ok: false, reason: `spent after ${attempts}; last: ${lastError}` };
      state.used += 1;
      return { ok: true, attempt: state.used, remaining: attempts - state.used };
    },
  };
}

const policy: ModelCallPolicy = {
  ...DEFAULT_MODEL_CALL_POLICY,
  attemptsPerStep: 4,
  baseDelayMs: 100,
  maxDelayMs: 1000,
};

describe("callModel: retries with backoff on failures another attempt may fix", () => {
  it("retries 429, 5xx and network errors, waiting Retry-After when given, then answers", async () => {
    const model = scripted([
      new ModelError("rate limited", { status: 429, retryAfter: "2" }),
      new ModelError("bad gateway", { status: 502 }),
      new TypeError("fetch failed"),
      REPLY,
    ]);
    const waits: number[] = [];
    const spent = budget(4);
    const reply = await callModel(model.client, request(), policy, {
      claimAttempt: spent.claimAttempt,
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0.5,
    });
    expect(reply).toEqual(REPLY);
    expect(model.calls).toBe(4);
    expect(spent.state.used).toBe(4);
    // Retry-After 2 s, then backoff 100 * 2^1 and 100 * 2^2 with jitter 0.5 (between half and all of it)
    expect(waits).toEqual([2000, 150, 300]);
  });

  it("does not retry a failure no attempt fixes (a 400, a plain error)", async () => {
    const denied = scripted([new ModelError("bad request", { status: 400 }), REPLY]);
    await expect(callModel(denied.client, request(), policy, budget(4))).rejects.toThrow("bad request");
    expect(denied.calls).toBe(1);
    const plain = scripted([new Error("the client is broken"), REPLY]);
    await expect(callModel(plain.client, request(), policy, budget(4))).rejects.toThrow(
      "the client is broken",
    );
    expect(plain.calls).toBe(1);
  });

  it("stops at the step's attempt budget, counting attempts earlier activations spent", async () => {
    const failing = scripted(Array.from({ length: 10 }, () => new ModelError("busy", { status: 503 })));
    const spent = budget(4, 2); // two attempts were spent before a restart
    const error = await callModel(failing.client, request(), policy, {
      claimAttempt: spent.claimAttempt,
      sleep: async () => {},
    }).catch((e: unknown) => e);
    expect(failing.calls).toBe(2);
    expect((error as Error).message).toBe("spent after 4; last: busy");
    // the last failure was told to the budget, which refused at once (no wait after the last call)
    expect(spent.state.lastErrors).toEqual([undefined, "busy", "busy"]);
  });

  it("times a hanging call out and retries it; an abort (an interrupt) is rethrown at once", async () => {
    const hanging = scripted(["hang", REPLY]);
    const reply = await callModel(
      hanging.client,
      request(),
      { ...policy, timeoutMs: 50 },
      {
        ...budget(4),
        sleep: async () => {},
      },
    );
    expect(reply).toEqual(REPLY);
    expect(hanging.calls).toBe(2);

    const controller = new AbortController();
    const stuck = scripted(["hang", REPLY]);
    const pending = callModel(stuck.client, request(controller.signal), policy, budget(4));
    controller.abort(new Error("interrupted (user)"));
    await expect(pending).rejects.toThrow("interrupted (user)");
    expect(stuck.calls).toBe(1);
  });

  it("refuses a reply the log could not keep, at once, and cleans a valid one", async () => {
    const broken = scripted([
      { content: [{ type: "image", url: "x" }], toolCalls: [], stopReason: "end" } as never,
      REPLY,
    ]);
    await expect(callModel(broken.client, request(), policy, budget(4))).rejects.toThrow(
      /^the model returned an invalid reply \(content\.0\.type: /,
    );
    expect(broken.calls).toBe(1);
    const extra = scripted([
      { ...REPLY, toolCalls: [{ id: "c", name: "echo", args: undefined }], extra: 1 } as never,
    ]);
    expect(await callModel(extra.client, request(), policy, budget(4))).toEqual({
      ...REPLY,
      toolCalls: [{ id: "c", name: "echo", args: {} }],
    });
  });

  it("gives up at once on a Retry-After longer than two minutes", async () => {
    const model = scripted([new ModelError("quota", { status: 429, retryAfter: "3600" }), REPLY]);
    await expect(
      callModel(model.client, request(), policy, { ...budget(4), sleep: async () => {} }),
    ).rejects.toThrow("quota");
    expect(model.calls).toBe(1);
  });
});

describe("Retry-After and backoff", () => {
  it("reads delta seconds and HTTP dates, and ignores what it cannot read", () => {
    const now = Date.parse("2026-12-01T10:00:00Z");
    expect(retryAfterMs("7", now)).toBe(7000);
    expect(retryAfterMs("0.5", now)).toBe(500);
    expect(retryAfterMs("Tue, 01 Dec 2026 10:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("Tue, 01 Dec 2026 09:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it("doubles up to the ceiling, jittered between half and all of it", () => {
    const failure = new ModelError("busy", { status: 503 });
    const limits = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelay(failure, 0, limits, () => 0)).toBe(50);
    expect(retryDelay(failure, 0, limits, () => 1)).toBe(100);
    expect(retryDelay(failure, 3, limits, () => 1)).toBe(800);
    expect(retryDelay(failure, 10, limits, () => 1)).toBe(1000);
  });
});
