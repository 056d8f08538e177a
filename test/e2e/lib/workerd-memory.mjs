// workerd's memory seen from outside (VmRSS of every workerd process in a dev server's process
// group): what the memory tests and the bounded-reads benchmark measure.
import { readFileSync } from "node:fs";
import { groupMembers } from "./dev-server.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resident memory of every workerd process in the server's process group, in bytes. */
export function workerdRss(pgid) {
  let total = 0;
  for (const pid of groupMembers(pgid)) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "workerd") continue;
      const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (kb) total += Number(kb[1]) * 1024;
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** workerd's memory once it stopped moving: three samples half a second apart within 4 MB. */
export async function settledRss(pgid) {
  const samples = [workerdRss(pgid)];
  for (let round = 0; round < 60; round++) {
    await sleep(500);
    samples.push(workerdRss(pgid));
    const last = samples.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) < 4 * 1024 * 1024) return last[2];
  }
  return samples.at(-1);
}

/** The most workerd's memory grew above `baseline` while `work` ran (sampled every 20 ms). */
export async function peakGrowth(pgid, baseline, work) {
  let peak = workerdRss(pgid);
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, workerdRss(pgid));
      await sleep(20);
    }
  })();
  try {
    const value = await work();
    return { growth: Math.max(0, peak - baseline), value };
  } finally {
    running = false;
    await sampler;
    peak = Math.max(peak, workerdRss(pgid));
  }
}

export const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MB`;
