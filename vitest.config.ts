import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * The Workers pool of the main suite (and of the fault campaign, which passes its own `main`: the
 * product's Worker plus a user tool, test/faults/worker.ts).
 */
export function workersPool(main?: string) {
  // The options are a function so they can `inject` what globalSetup provides: the fake
  // OpenAI-compatible server listens on a loopback port the OS picks when the run starts.
  return cloudflareTest(({ inject }) => {
    const fakeOpenAi = inject("fakeOpenAi");
    if (!fakeOpenAi) throw new Error("globalSetup ./test/setup/openai-server.ts did not provide fakeOpenAi");
    const mcpServer = inject("mcpServer");
    if (!mcpServer) throw new Error("globalSetup ./test/setup/mcp-server.ts did not provide mcpServer");
    const a2aAgent = inject("a2aAgent");
    if (!a2aAgent) throw new Error("globalSetup ./test/setup/a2a-agent.ts did not provide a2aAgent");
    return {
      ...(main ? { main } : {}),
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          ADMIN_TOKEN: "test-admin-token",
          OPENAI_BASE_URL: fakeOpenAi.baseUrl,
          OPENAI_API_KEY: fakeOpenAi.apiKey,
          TENANT_TOKENS: JSON.stringify({ "tenant-acme-admin-token": "acme" }),
          // remote delegation tests route this host (and remote.test) back into the Worker
          PUBLIC_URL: "https://parent.test",
          // a hanging model call (the fake server's "hang once") times out quickly
          MODEL_TIMEOUT_SECONDS: "2",
          // browser apps on this origin may call the API (test/workers/http/conventions.test.ts)
          CORS_ORIGINS: "https://app.example.com, https://other.example.com",
          // the tests' real MCP server (test/setup/mcp-server.ts), for sessions' mcpServers
          TEST_MCP_URL: mcpServer.url,
          TEST_MCP_TOKEN: mcpServer.token,
          // the tests' A2A agent on the SDK's server side (test/setup/a2a-agent.ts), for a2a providers
          TEST_A2A_URL: a2aAgent.url,
          TEST_A2A_TOKEN: a2aAgent.token,
          // what `openai:priced-*` models cost (README "Prices and budgets"); other routes have no price
          MODEL_PRICES: JSON.stringify({
            "openai:priced-*": { input: 1000, output: 2000, cachedInput: 500 },
          }),
        },
      },
    };
  });
}

export default defineConfig({
  plugins: [workersPool()],
  test: {
    include: ["test/unit/**/*.test.ts", "test/workers/**/*.test.ts"],
    globalSetup: ["./test/setup/openai-server.ts", "./test/setup/mcp-server.ts", "./test/setup/a2a-agent.ts"],
    testTimeout: 20_000,
  },
});
