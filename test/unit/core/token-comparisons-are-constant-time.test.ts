import { describe, expect, it } from "vitest";
import { checkAccess, sameSecret } from "../../../src/core/access";
import type { SessionHeader } from "../../../src/contract/session";

/**
 * Every token comparison goes through one constant-time helper (issue 23 found session token
 * hashes compared with `!==`). These tests pin the helper's results, never its timing.
 */

const HASH = `${"a".repeat(63)}b`;

describe("sameSecret, the one comparison of tokens and their hashes", () => {
  it("is true only for the same string", () => {
    expect(sameSecret(HASH, `${"a".repeat(63)}b`)).toBe(true);
    expect(sameSecret("", "")).toBe(true);
    expect(sameSecret("tök€n", "tök€n")).toBe(true);
  });

  it("is false wherever the strings differ: first, middle or last character, case, length", () => {
    expect(sameSecret(HASH, `b${"a".repeat(62)}b`)).toBe(false);
    expect(sameSecret(HASH, `${"a".repeat(30)}c${"a".repeat(32)}b`)).toBe(false);
    expect(sameSecret(HASH, "a".repeat(64))).toBe(false);
    expect(sameSecret(HASH, HASH.toUpperCase())).toBe(false);
    expect(sameSecret(HASH, HASH.slice(0, 63))).toBe(false);
    expect(sameSecret(HASH, `${HASH}b`)).toBe(false);
    expect(sameSecret(HASH, "")).toBe(false);
    // characters whose codes differ only above the low byte are still different
    expect(sameSecret("\u0161", "\u0061")).toBe(false);
  });
});

describe("checkAccess compares a session token's hash with the stored one", () => {
  const header = (tokenHash: string | null, lineage: string[] = []): SessionHeader => ({
    id: "s1",
    parentSession: null,
    origin: null,
    delegationDepth: 0,
    createdAt: 0,
    tokenHash,
    lineage,
    options: { model: "scripted" },
  });
  const session = (sessionId: string, tokenHash: string) => ({
    kind: "session" as const,
    sessionId,
    tokenHash,
  });

  it("admits the matching hash, its own session's and an ancestor's", () => {
    expect(checkAccess(header(HASH), session("s1", HASH), "act")).toBeUndefined();
    expect(checkAccess(header(HASH, ["root"]), session("root", HASH), "read")).toBeUndefined();
  });

  it("refuses a hash that differs in its last character, its length or a stored null as 401", () => {
    for (const [stored, presented] of [
      [HASH, `${"a".repeat(63)}c`],
      [HASH, HASH.slice(0, 63)],
      [null, HASH],
    ] as const) {
      expect(checkAccess(header(stored), session("s1", presented), "read")?.code).toBe("UNAUTHENTICATED");
    }
  });
});
