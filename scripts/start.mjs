#!/usr/bin/env node
// `npm start`: the local runtime on http://127.0.0.1:8787 with its dashboard, persisting state
// under .wrangler/state (it survives restarts).
//
// The admin token: ADMIN_TOKEN from the environment, else from .dev.vars (git-ignored; see
// .dev.vars.example), else a random one generated now and kept in .dev.vars so it survives
// restarts. It is printed either way. A token shorter than 16 characters is refused here, as the
// Worker would refuse it (the old well-known default `dev-admin-token` in .dev.vars is replaced).
//
// The Host check: ALLOWED_HOSTS from the environment (`ALLOWED_HOSTS=my.host npm start`; empty:
// any host), else the loopback names, so a web page cannot reach this server by DNS rebinding.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const MIN_ADMIN_TOKEN_LENGTH = 16;
export const LOOPBACK_HOSTS = "localhost,127.0.0.1,[::1]";
/** The admin token .dev.vars used to ship with: well known, so never used again. */
const OLD_DEFAULT = "dev-admin-token";
const LINE = /^ADMIN_TOKEN=(.*)$/m;

/** 32 random bytes, base64url: 43 characters. */
export function generateToken() {
  return randomBytes(32).toString("base64url");
}

/**
 * The admin token `npm start` uses: `{ token, source, devVars? }` (`devVars`: what .dev.vars must
 * now hold, when a token was generated) or `{ error }` for a token too short to accept.
 * @param {Record<string, string | undefined>} environment
 * @param {string | undefined} devVars the content of .dev.vars, if the file exists
 */
export function chooseAdminToken(environment, devVars) {
  if (environment.ADMIN_TOKEN)
    return checked(environment.ADMIN_TOKEN, "ADMIN_TOKEN in the environment", "environment");
  const found = devVars === undefined ? undefined : LINE.exec(devVars);
  const fromFile = found?.[1]?.trim().replace(/^(["'])(.*)\1$/, "$2");
  if (fromFile && fromFile !== OLD_DEFAULT) return checked(fromFile, "ADMIN_TOKEN in .dev.vars", ".dev.vars");
  const token = generateToken();
  const line = `ADMIN_TOKEN=${token}`;
  let next;
  if (devVars === undefined) next = `${line}\n`;
  else if (found) next = devVars.replace(LINE, line);
  else next = `${devVars}${devVars === "" || devVars.endsWith("\n") ? "" : "\n"}${line}\n`;
  return { token, source: "generated", devVars: next };
}

function checked(token, where, source) {
  if (token.length >= MIN_ADMIN_TOKEN_LENGTH) return { token, source };
  return {
    error:
      `${where} has ${token.length} characters; the runtime refuses an admin token shorter than ` +
      `${MIN_ADMIN_TOKEN_LENGTH} (it could be guessed). Set a longer one (e.g. \`openssl rand -hex 32\`), ` +
      "or remove it to have npm start generate one.",
  };
}

/**
 * The `wrangler dev` arguments of `npm start`. The admin token is on the command line (visible to
 * every local user in `ps`) only when it came from the environment: from .dev.vars, or generated
 * and kept there, wrangler reads it from that file.
 */
export function wranglerArgs({ port, token, allowedHosts, source = "environment" }) {
  return [
    "wrangler",
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    port,
    "--persist-to",
    ".wrangler/state",
    ...(source === "environment" ? ["--var", `ADMIN_TOKEN:${token}`] : []),
    "--var",
    `ALLOWED_HOSTS:${allowedHosts}`,
    "--show-interactive-dev-session=false",
  ];
}

function main() {
  const port = process.env.PORT ?? "8787";
  const devVarsPath = ".dev.vars";
  const devVars = existsSync(devVarsPath) ? readFileSync(devVarsPath, "utf8") : undefined;
  const chosen = chooseAdminToken(process.env, devVars);
  if (chosen.error) {
    console.error(`npm start: ${chosen.error}`);
    process.exit(1);
  }
  const { token } = chosen;
  if (chosen.devVars !== undefined) writeFileSync(devVarsPath, chosen.devVars, { mode: 0o600 });
  const allowedHosts = process.env.ALLOWED_HOSTS ?? LOOPBACK_HOSTS;
  const origin =
    chosen.source === "generated" ? " (generated, kept in .dev.vars)" : ` (from ${chosen.source})`;

  console.log(`
subagents runtime starting on http://127.0.0.1:${port}  (dashboard: http://127.0.0.1:${port}/)
admin token: ${token}${origin}
hosts served: ${allowedHosts || "any"}  (ALLOWED_HOSTS=<names> npm start to change)
try:
  curl -s -X POST http://127.0.0.1:${port}/v1/sessions -H "authorization: Bearer ${token}" -H "content-type: application/json" -d '{}'
`);

  const child = spawn("npx", wranglerArgs({ port, token, allowedHosts, source: chosen.source }), {
    stdio: "inherit",
    env: { ...process.env, X_LOCAL_OBSERVABILITY: "false" },
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code) => process.exit(code ?? 0));
}

// run as a script (npm start); imported (the tests), it only exports its pieces
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
