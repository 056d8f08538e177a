#!/usr/bin/env node
// `npx subagents-edge <command>`: the package's command line (Node 22+).
//   acp-bridge   serve a stdio ACP agent (Claude Code, Codex, Gemini CLI, ...) over WebSockets,
//                so a Worker's `acp` provider can reach it
//   build        split a Worker into modules that load on first use (README "Start fast")
import { ACP_BRIDGE_USAGE, acpBridgeMain } from "./acp-bridge.mjs";
import { BUILD_USAGE, buildMain } from "./build.mjs";

const [command, ...rest] = process.argv.slice(2);
const USAGE = `${ACP_BRIDGE_USAGE}\n\n${BUILD_USAGE}`;
const COMMANDS = { "acp-bridge": acpBridgeMain, build: buildMain };

if (Object.hasOwn(COMMANDS, command)) {
  COMMANDS[command](rest).catch((error) => {
    console.error(`${command}: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
} else {
  console.error(command === undefined || command === "--help" ? USAGE : `unknown command "${command}"\n${USAGE}`);
  process.exit(command === "--help" ? 0 : 2);
}
