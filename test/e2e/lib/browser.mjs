// The browser the end-to-end tests drive: the Chromium that ships inside the `@sparticuz/chromium`
// npm package (its binary is in the package, so `npm ci` alone brings it; no download, no system
// package). `CHROMIUM_PATH` points the tests at another Chromium instead. A browser that cannot be
// found or started fails the test that needs it: it is never a silent skip.
import { existsSync } from "node:fs";
import packagedChromium from "@sparticuz/chromium";
import { chromium } from "playwright-core";

/** Flags for a headless run in a sandbox-less CI container, beside the package's own. */
const EXTRA_ARGS = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The executable and its flags: `CHROMIUM_PATH` if set, else the packaged binary (unpacked once). */
export async function browserExecutable() {
  const override = process.env.CHROMIUM_PATH;
  if (override) {
    if (!existsSync(override)) throw new Error(`CHROMIUM_PATH=${override} does not exist`);
    return { executablePath: override, args: ["--headless", "--no-sandbox", ...EXTRA_ARGS] };
  }
  const executablePath = await packagedChromium.executablePath();
  if (!existsSync(executablePath))
    throw new Error(`@sparticuz/chromium did not unpack its binary (${executablePath}): run npm ci`);
  return { executablePath, args: [...packagedChromium.args, ...EXTRA_ARGS] };
}

/** A persistent headless browser context in `profileDir`. */
export async function launchBrowser(profileDir, options = {}) {
  const { executablePath, args } = await browserExecutable();
  return chromium.launchPersistentContext(profileDir, { executablePath, headless: true, args, ...options });
}
