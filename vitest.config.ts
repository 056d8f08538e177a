import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { ADMIN_TOKEN: "test-admin-token" } },
    }),
  ],
  test: {
    include: ["test/unit/**/*.test.ts", "test/workers/**/*.test.ts"],
    testTimeout: 20_000,
  },
});
