#!/usr/bin/env node
// `npm start`: the local runtime on http://127.0.0.1:8787 with its dashboard, persisting state
// under .wrangler/state (it survives restarts). The admin token comes from ADMIN_TOKEN in the
// environment, else from .dev.vars (created with a local-only default on first start).
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const port = process.env.PORT ?? "8787";
let token = process.env.ADMIN_TOKEN;
if (!token) {
  if (!existsSync(".dev.vars")) writeFileSync(".dev.vars", "ADMIN_TOKEN=dev-admin-token\n");
  token = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(".dev.vars", "utf8"))?.[1]?.trim() ?? "dev-admin-token";
}

console.log(`
subagents runtime starting on http://127.0.0.1:${port}  (dashboard: http://127.0.0.1:${port}/)
admin token: ${token}
try:
  curl -s -X POST http://127.0.0.1:${port}/v1/sessions -H "authorization: Bearer ${token}" -H "content-type: application/json" -d '{}'
`);

const args = [
  "wrangler",
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  port,
  "--persist-to",
  ".wrangler/state",
  "--var",
  `ADMIN_TOKEN:${token}`,
  "--show-interactive-dev-session=false",
];
const child = spawn("npx", args, {
  stdio: "inherit",
  env: { ...process.env, X_LOCAL_OBSERVABILITY: "false" },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 0));
