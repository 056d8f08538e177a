// The startup benchmark's Workers (bench/lib/startup.mjs), bundled with the settings its bundle
// rows use: the `createSubagents()` Worker of `subagents-edge/core` with no protocol
// (bench/startup/minimal) holds no byte of the MCP, A2A or ACP SDKs or of the AI SDK providers of
// the `openai:` and `workers-ai:` routes, and this repository's own Worker (src/index.ts,
// `subagents-edge/worker`) holds them all.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { bundleSizes, PROTOCOL_SDKS, STARTUP_WORKERS } from "../../bench/lib/startup.mjs";

const entry = (key) => STARTUP_WORKERS.find((w) => w.key === key).entry;
const families = (sizes) =>
  PROTOCOL_SDKS.filter((entry) =>
    Object.keys(sizes.protocolSdks).some((name) =>
      entry.endsWith("/") ? name.startsWith(entry) : name === entry,
    ),
  );

describe("the startup Workers carry only their protocols", () => {
  it("the minimal Worker (subagents-edge/core, no protocol) bundles no protocol SDK code", async () => {
    const sizes = await bundleSizes(entry("minimal"));
    assert.deepEqual(sizes.protocolSdks, {});
    assert.ok(sizes.rawBytes > 100_000, "the bundle holds the runtime");
  });

  it("this repository's Worker (subagents-edge/worker) bundles every protocol's SDK", async () => {
    const sizes = await bundleSizes(entry("runtime"));
    assert.deepEqual(families(sizes), PROTOCOL_SDKS);
    const minimal = await bundleSizes(entry("minimal"));
    assert.ok(sizes.rawBytes > minimal.rawBytes, "the protocols' code is what the minimal Worker leaves out");
  });
});
