import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * The embedding suite: the runtime inside another Worker (test/embedding/worker.ts, its own
 * wrangler.toml), through the public entry, with that Worker's tools and models.
 */
export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => {
      const fakeOpenAi = inject("fakeOpenAi");
      if (!fakeOpenAi)
        throw new Error("globalSetup ./test/setup/openai-server.ts did not provide fakeOpenAi");
      return {
        wrangler: { configPath: "./test/embedding/wrangler.toml" },
        miniflare: {
          bindings: {
            ADMIN_TOKEN: "test-admin-token",
            OPENAI_BASE_URL: fakeOpenAi.baseUrl,
            OPENAI_API_KEY: fakeOpenAi.apiKey,
          },
        },
      };
    }),
  ],
  test: {
    include: ["test/embedding/**/*.test.ts"],
    globalSetup: ["./test/setup/openai-server.ts"],
    testTimeout: 20_000,
  },
});
