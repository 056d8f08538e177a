import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * The Workers pool of the main suite: this repository's Worker from its sources, src/index.ts (and
 * of the fault campaign, which passes its own `main`: the product's Worker plus a user tool,
 * test/faults/worker.ts). `traceExport`: the Worker exports its
 * spans to the tests' OTLP receiver (test/setup/otlp-receiver.ts), for the export tests alone.
 * `vars`: deployment vars of a project whose Worker is configured otherwise than the main one's.
 */
export function workersPool(
  main?: string,
  { traceExport = false, vars = {} }: { traceExport?: boolean; vars?: Record<string, string> } = {},
) {
  // The options are a function so they can `inject` what globalSetup provides: the fake
  // OpenAI-compatible server listens on a loopback port the OS picks when the run starts.
  return cloudflareTest(({ inject }) => {
    const fakeOpenAi = inject("fakeOpenAi");
    if (!fakeOpenAi) throw new Error("globalSetup ./test/setup/openai-server.ts did not provide fakeOpenAi");
    const mcpServer = inject("mcpServer");
    if (!mcpServer) throw new Error("globalSetup ./test/setup/mcp-server.ts did not provide mcpServer");
    const a2aAgent = inject("a2aAgent");
    if (!a2aAgent) throw new Error("globalSetup ./test/setup/a2a-agent.ts did not provide a2aAgent");
    const exportVars = traceExport ? traceExportBindings(inject("otlpReceiver")) : {};
    return {
      // the sources, bundled by the pool (wrangler.toml's `main` is their build for wrangler)
      main: main ?? "./src/index.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          ...exportVars,
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
          ...vars,
        },
      },
    };
  });
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT and its headers (a malformed entry among them, which is skipped)
 * for the export tests, with message content captured; every other test runs without export.
 */
function traceExportBindings(receiver: { endpoint: string } | undefined): Record<string, string> {
  if (!receiver) throw new Error("globalSetup ./test/setup/otlp-receiver.ts did not provide otlpReceiver");
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_HEADERS:
      "x-otlp-token=s3cret%20token,malformed,Authorization=Basic%20b3RlbDpwdw%3D%3D",
    OTEL_SERVICE_NAME: "subagents-export-test",
    // what was said goes out too (opt-in; every other project keeps the default, off)
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
    // each turn's batch as the turn ends, so each test sees its own request (batching: unit tests)
    OTEL_BSP_SCHEDULE_DELAY: "0",
  };
}

/**
 * What every Workers project of the suite shares (the fault campaign's too). The setup file runs
 * each `import()` inside the pool's runner object, so the Worker loads its parts on first need
 * (src/worker/lazy-parts.ts) as it does deployed (test/setup/imports-in-the-runner.ts says why).
 */
export const workersTest = {
  globalSetup: ["./test/setup/openai-server.ts", "./test/setup/mcp-server.ts", "./test/setup/a2a-agent.ts"],
  setupFiles: ["./test/setup/imports-in-the-runner.ts"],
  testTimeout: 20_000,
};

/**
 * The export tests: their Worker exports to the receiver, so they run in a project of their own
 * (export-off.test.ts stays in the main one, whose Worker exports nothing).
 */
const EXPORT_TESTS = "test/workers/trace/export.test.ts";

/**
 * The tests of a deployment that says a person holds every MCP client (MCP_FACE_DECISIONS=true,
 * README "Approvals"): its MCP faces offer `decide_approval`; the main project's offer it nowhere.
 */
const FACE_DECISIONS_TESTS = "test/workers/mcp/face-decisions-on/**/*.test.ts";

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [workersPool()],
        test: {
          ...workersTest,
          name: "workers",
          include: ["test/unit/**/*.test.ts", "test/workers/**/*.test.ts"],
          exclude: [...configDefaults.exclude, EXPORT_TESTS, FACE_DECISIONS_TESTS],
        },
      },
      {
        plugins: [workersPool(undefined, { vars: { MCP_FACE_DECISIONS: "true" } })],
        test: {
          ...workersTest,
          name: "mcp-face-decisions",
          include: [FACE_DECISIONS_TESTS],
        },
      },
      {
        plugins: [workersPool(undefined, { traceExport: true })],
        test: {
          ...workersTest,
          name: "trace-export",
          include: [EXPORT_TESTS],
          globalSetup: [...workersTest.globalSetup, "./test/setup/otlp-receiver.ts"],
          testTimeout: 90_000,
        },
      },
    ],
  },
});
