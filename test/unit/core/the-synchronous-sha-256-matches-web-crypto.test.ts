import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../src/core/hash";
import { sha256HexSync } from "../../../src/core/sha256";

/**
 * The synchronous SHA-256 (src/core/sha256.ts) gives Web Crypto's digest for every input: the
 * standard's test vectors, every length across the one- and two-block padding boundaries, and
 * text that is not ASCII (hashed as UTF-8).
 */
describe("the synchronous SHA-256", () => {
  it("gives the FIPS 180-4 test vectors", () => {
    expect(sha256HexSync("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256HexSync("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256HexSync("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("matches Web Crypto for every length from 0 to 300 bytes and for text that is not ASCII", async () => {
    const inputs = Array.from({ length: 301 }, (_, n) =>
      Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7 + n) % 90))).join(""),
    );
    inputs.push(
      "é",
      "日本語のテキスト",
      "emoji 🙂 and a lone surrogate \ud800",
      `reserved:${crypto.randomUUID()}\n${crypto.randomUUID()}`,
    );
    for (const text of inputs) expect(sha256HexSync(text), JSON.stringify(text)).toBe(await sha256Hex(text));
  });
});
