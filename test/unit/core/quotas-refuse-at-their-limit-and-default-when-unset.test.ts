import { positiveInt } from "../../../src/core/positive-int";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_LOG_BYTES,
  DEFAULT_MAX_PENDING_MESSAGES,
  DEFAULT_MAX_SESSIONS_PER_TREE,
  inboxFull,
  logRefusal,
  messageQuota,
  treeRefusal,
  utf8Length,
} from "../../../src/core/quotas";

/** The quotas' arithmetic (src/core/quotas.ts), pure: each at its limit and one past it. */

describe("the quotas", () => {
  it("let a tree of MAX_SESSIONS_PER_TREE - 1 sessions grow by one, and refuse one of MAX_SESSIONS_PER_TREE", () => {
    expect(treeRefusal(9_999, undefined)).toBeUndefined();
    expect(treeRefusal(10_000, undefined)).toEqual({
      ok: false,
      code: "QUOTA_EXCEEDED",
      message:
        "this session's tree already holds 10000 sessions (MAX_SESSIONS_PER_TREE); no more children can start in it",
    });
    expect(treeRefusal(2, "3")).toBeUndefined();
    expect(treeRefusal(3, "3")?.code).toBe("QUOTA_EXCEEDED");
  });

  it("take new work into a log one byte under MAX_LOG_BYTES, and refuse it at MAX_LOG_BYTES", () => {
    expect(logRefusal(DEFAULT_MAX_LOG_BYTES - 1, undefined)).toBeUndefined();
    expect(logRefusal(DEFAULT_MAX_LOG_BYTES, undefined)).toEqual({
      ok: false,
      code: "QUOTA_EXCEEDED",
      message:
        "this session's log holds 268435456 bytes, at or past its quota of 268435456 (MAX_LOG_BYTES); it takes no new work",
    });
    expect(logRefusal(99, "100")).toBeUndefined();
    expect(logRefusal(101, "100")?.code).toBe("QUOTA_EXCEEDED");
  });

  it("give a message MAX_PENDING_MESSAGES places while the log has room, and none once it is full", () => {
    expect(messageQuota(0, { inboxCap: undefined, logCap: undefined })).toEqual({
      capacity: DEFAULT_MAX_PENDING_MESSAGES,
      refusal: inboxFull(1000),
    });
    expect(inboxFull(1000)).toMatchObject({
      code: "INBOX_FULL",
      message: expect.stringMatching(/MAX_PENDING_MESSAGES/),
    });
    expect(messageQuota(99, { inboxCap: "5", logCap: "100" })).toMatchObject({
      capacity: 5,
      refusal: { code: "INBOX_FULL" },
    });
    expect(messageQuota(100, { inboxCap: "5", logCap: "100" })).toMatchObject({
      capacity: 0,
      refusal: { code: "QUOTA_EXCEEDED" },
    });
  });

  it("read an absent or malformed var as its default, as every numeric var is read", () => {
    for (const raw of [undefined, "", "0", "-3", "1.5", "ten", "1e400", String(2 ** 60)])
      expect(positiveInt(raw, DEFAULT_MAX_SESSIONS_PER_TREE), String(raw)).toBe(
        DEFAULT_MAX_SESSIONS_PER_TREE,
      );
    expect(positiveInt("12", 5)).toBe(12);
  });

  it("measure text in the UTF-8 bytes SQLite stores, a lone surrogate as U+FFFD", () => {
    const encoder = new TextEncoder();
    for (const text of [
      "",
      "plain ascii",
      "é",
      "漢字",
      "😀",
      "a😀b\u{10FFFF}",
      "\ud800",
      "x\udc00y",
      "\ud83d",
    ])
      expect(utf8Length(text), JSON.stringify(text)).toBe(encoder.encode(text).byteLength);
  });
});
