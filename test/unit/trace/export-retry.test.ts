import { describe, expect, it } from "vitest";
import {
  BACKOFF,
  backoffMs,
  nextRetry,
  parseRetry,
  RETRY_AFTER,
  readAnswer,
  retryAfterMs,
} from "../../../src/trace/export-retry";

const NOW = Date.UTC(2026, 0, 1);

describe("when the exporter tries again (src/trace/export-retry.ts)", () => {
  it("backs off exponentially from 1 s to a 5 min cap, each delay between half and all of its step", () => {
    expect(backoffMs(1, () => 0)).toBe(500);
    expect(backoffMs(1, () => 0.999_999)).toBe(1_000);
    expect(backoffMs(2, () => 0.999_999)).toBe(2_000);
    expect(backoffMs(5, () => 0.5)).toBe(12_000);
    for (const attempt of [10, 50, 5_000]) {
      expect(backoffMs(attempt, () => 0.999_999)).toBe(BACKOFF.capMs);
      expect(backoffMs(attempt, () => 0)).toBe(BACKOFF.capMs / 2);
    }
  });

  it("counts the failed tries, and a collector's Retry-After replaces the backoff within [1 s, 1 h]", () => {
    const first = nextRetry(undefined, undefined, NOW, () => 0.5);
    expect(first).toEqual({ attempts: 1, at: NOW + 750 });
    const second = nextRetry(first, undefined, NOW, () => 0.5);
    expect(second).toEqual({ attempts: 2, at: NOW + 1_500 });
    expect(nextRetry(second, 30_000, NOW)).toEqual({ attempts: 3, at: NOW + 30_000 });
    expect(nextRetry(second, 0, NOW).at).toBe(NOW + RETRY_AFTER.minMs);
    expect(nextRetry(second, 10 * 3600_000, NOW).at).toBe(NOW + RETRY_AFTER.maxMs);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    expect(retryAfterMs("7", NOW)).toBe(7_000);
    expect(retryAfterMs(" 0 ", NOW)).toBe(0);
    expect(retryAfterMs(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(retryAfterMs(new Date(NOW - 90_000).toUTCString(), NOW)).toBe(0);
    expect(retryAfterMs("soon", NOW)).toBeUndefined();
    expect(retryAfterMs("-3", NOW)).toBeUndefined();
    expect(retryAfterMs(null, NOW)).toBeUndefined();
  });

  it("2xx is accepted (a partial success's rejected spans counted), 408/429/5xx and redirects are retried, other 4xx refused", () => {
    expect(readAnswer(200, null, {}, NOW)).toEqual({ kind: "accepted", rejected: 0 });
    expect(readAnswer(200, null, undefined, NOW)).toEqual({ kind: "accepted", rejected: 0 });
    expect(readAnswer(202, null, { partialSuccess: { rejectedSpans: "3", errorMessage: "x" } }, NOW)).toEqual(
      {
        kind: "accepted",
        rejected: 3,
      },
    );
    expect(readAnswer(200, null, { partialSuccess: {} }, NOW)).toEqual({ kind: "accepted", rejected: 0 });
    for (const status of [408, 429, 500, 502, 503, 504, 301, 307])
      expect(readAnswer(status, null, undefined, NOW).kind).toBe("retry");
    for (const status of [400, 401, 403, 404, 413, 415])
      expect(readAnswer(status, null, undefined, NOW)).toEqual({ kind: "refused", status });
  });

  it("Retry-After counts on 429 and 503 only", () => {
    expect(readAnswer(429, "5", undefined, NOW)).toEqual({ kind: "retry", afterMs: 5_000, why: "HTTP 429" });
    expect(readAnswer(503, "2", undefined, NOW)).toEqual({ kind: "retry", afterMs: 2_000, why: "HTTP 503" });
    expect(readAnswer(500, "2", undefined, NOW)).toEqual({
      kind: "retry",
      afterMs: undefined,
      why: "HTTP 500",
    });
  });

  it("a stored retry state is read back; anything unreadable is none", () => {
    expect(parseRetry(JSON.stringify({ attempts: 2, at: NOW }))).toEqual({ attempts: 2, at: NOW });
    expect(parseRetry(undefined)).toBeUndefined();
    expect(parseRetry("[")).toBeUndefined();
    expect(parseRetry(JSON.stringify({ attempts: 1.5, at: NOW }))).toBeUndefined();
  });
});
