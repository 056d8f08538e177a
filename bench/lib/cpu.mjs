// CPU time of this process and of the workerd it started (Linux /proc; read-only), to tell how
// much of the machine a phase used and whether workerd's busiest thread was near one full core.
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime + stime in ms from a /proc/.../stat line (fields after the parenthesised name). */
function statCpuMs(path) {
  const text = readFileSync(path, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

function parentOf(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
}

/** The workerd processes descended from this Node process (none off Linux). */
export function workerdPids() {
  let entries;
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const found = [];
  for (const entry of entries) {
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "workerd") continue;
      for (let pid = Number(entry), hops = 0; pid > 1 && hops < 5; pid = parentOf(pid), hops++) {
        if (pid === process.pid) {
          found.push(Number(entry));
          break;
        }
      }
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

/** A snapshot: Node's CPU ms, workerd's CPU ms, and workerd's per-thread CPU ms. */
export function cpuSnapshot() {
  const node = process.cpuUsage();
  const snapshot = {
    at: performance.now(),
    nodeMs: (node.user + node.system) / 1000,
    workerdMs: 0,
    threads: {},
  };
  for (const pid of workerdPids()) {
    try {
      snapshot.workerdMs += statCpuMs(`/proc/${pid}/stat`);
      for (const tid of readdirSync(`/proc/${pid}/task`))
        snapshot.threads[`${pid}/${tid}`] = statCpuMs(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      // the process ended meanwhile
    }
  }
  return snapshot;
}

/** CPU used between two snapshots, as ms and as % of one core over the wall time. */
export function cpuBetween(a, b) {
  const wall = b.at - a.at;
  const busiest = Math.max(0, ...Object.entries(b.threads).map(([k, v]) => v - (a.threads[k] ?? 0)));
  const pct = (x) => Math.round((100 * x) / wall);
  return {
    wallMs: Math.round(wall),
    nodeMs: Math.round(b.nodeMs - a.nodeMs),
    workerdMs: Math.round(b.workerdMs - a.workerdMs),
    nodePct: pct(b.nodeMs - a.nodeMs),
    workerdPct: pct(b.workerdMs - a.workerdMs),
    workerdBusiestThreadPct: pct(busiest),
  };
}

/** Cumulative pressure-stall totals (µs some task waited for CPU / IO), or undefined off Linux. */
export function pressure() {
  try {
    const total = (file) => Number(/^some .*total=(\d+)/m.exec(readFileSync(file, "utf8"))?.[1]);
    return { at: performance.now(), cpuUs: total("/proc/pressure/cpu"), ioUs: total("/proc/pressure/io") };
  } catch {
    return undefined;
  }
}
