// The load test ("load held"): many sessions, plain text messages offered at a steady rate (an
// open loop: sends leave on schedule whether or not earlier ones were answered), then a check
// that every accepted message was answered exactly once. Admin token (exempt from the per-token
// rate limit, so a 429 would mean the runtime itself refused). Loopback only, bounded throughout.
import { cpuBetween, cpuSnapshot, pressure } from "./cpu.mjs";
import { pool, summarize } from "./stats.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * When a step counts as sustained (see `stable`): queueing shows first in the median (it jumps
 * from a few ms to seconds once the offered rate passes what workerd gets of the CPU); the p99
 * bound catches long stalls without failing a step for one GC pause or a neighbour's burst.
 */
export const STABLE = { acceptedShare: 0.99, p50Ms: 25, p99Ms: 250, drainMs: 1_000 };

/** Sends still unanswered beyond this many are not sent (counted as `notSent`): bounds the client. */
const IN_FLIGHT_CAP = 1_000;

/**
 * Offers `rate` messages/s for `seconds`, round-robin over `targets`, each a unique text that the
 * scripted model echoes. Resolves when every send has its answer (or its error) with the phase's
 * figures; every send is also appended to `ledger` for the final check.
 */
export async function offer(admin, targets, { rate, seconds, label, ledger }) {
  const total = Math.max(1, Math.round(rate * seconds));
  const sends = [];
  let inFlight = 0;
  let notSent = 0;
  let lateMs = 0;
  const cpu0 = cpuSnapshot();
  const pressure0 = pressure();
  const t0 = performance.now();
  const one = async (i) => {
    const target = targets[i % targets.length];
    const text = `load ${label} ${i}`;
    const record = { session: target.id, text, status: 0, ms: 0, at: performance.now() - t0 };
    sends.push(record);
    ledger.push(record);
    inFlight++;
    const started = performance.now();
    try {
      const { status, body } = await admin.call("POST", `/v1/sessions/${target.id}/messages`, {
        content: text,
      });
      record.status = status;
      if (status === 202) record.messageId = body.messageId;
      else record.code = body?.error?.code;
    } catch (error) {
      record.status = -1; // no answer: network error or the client's 15 s timeout
      record.code = error instanceof Error ? error.name : "error";
    } finally {
      record.ms = performance.now() - started;
      inFlight--;
    }
  };
  const running = [];
  for (let i = 0; i < total; ) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
    lateMs = Math.max(lateMs, performance.now() - (t0 + (i * 1000) / rate));
    for (; i < due; i++) {
      if (inFlight >= IN_FLIGHT_CAP) notSent++;
      else running.push(one(i));
    }
    const next = t0 + (i * 1000) / rate;
    await sleep(Math.max(0, next - performance.now()));
  }
  const offeredMs = performance.now() - t0;
  await Promise.all(running);
  const result = figures(sends, { rate, seconds, offeredMs, notSent, lateMs });
  result.cpu = cpuBetween(cpu0, cpuSnapshot());
  result.cpu.workerdMsPerAccepted = result.accepted > 0 ? result.cpu.workerdMs / result.accepted : null;
  result.cpu.nodeMsPerSend = result.sent > 0 ? result.cpu.nodeMs / result.sent : null;
  result.pressure = pressureBetween(pressure0, pressure());
  return result;
}

/** Share of the phase's wall time in which some task of the machine waited for CPU / for IO (PSI). */
function pressureBetween(a, b) {
  if (!a || !b) return null;
  const wallUs = (b.at - a.at) * 1000;
  const share = (x, y) => Math.round((100 * (y - x)) / wallUs);
  return { cpuSomePct: share(a.cpuUs, b.cpuUs), ioSomePct: share(a.ioUs, b.ioUs) };
}

/** Counts by outcome, accept latency and accepted/s (overall and in 5 s windows by send time). */
function figures(sends, { rate, seconds, offeredMs, notSent, lateMs }) {
  const count = (test) => sends.filter(test).length;
  const accepted = sends.filter((s) => s.status === 202);
  const windows = [];
  const latencyWindows = [];
  for (let from = 0; from + 5_000 <= seconds * 1_000 + 1; from += 5_000) {
    const inWindow = accepted.filter((s) => s.at >= from && s.at < from + 5_000);
    windows.push(Math.round(inWindow.length / 5));
    const w = summarize(inWindow.map((s) => s.ms));
    latencyWindows.push({ p50: Math.round(w.p50 * 10) / 10, p99: Math.round(w.p99 * 10) / 10 });
  }
  return {
    offeredRate: rate,
    seconds,
    offeredMs: Math.round(offeredMs),
    sent: sends.length,
    notSent,
    accepted: accepted.length,
    acceptedPerSecond: accepted.length / seconds,
    acceptedPerSecondBy5s: windows,
    latency: summarize(accepted.map((s) => s.ms)),
    latencyBy5s: latencyWindows,
    status429: count((s) => s.status === 429),
    status503: count((s) => s.status === 503),
    status5xx: count((s) => s.status >= 500 && s.status !== 503),
    otherStatus: count((s) => s.status > 0 && s.status !== 202 && s.status !== 429 && s.status < 500),
    noAnswer: count((s) => s.status === -1),
    generatorLateMs: Math.round(lateMs),
  };
}

/** Polls every target until all are idle (their turns done); resolves with how long it took. */
export async function drain(admin, targets, timeoutMs) {
  const t0 = performance.now();
  for (;;) {
    const views = await Promise.all(targets.map((t) => admin.describe(t.id)));
    if (views.every((v) => v.status === "idle")) return performance.now() - t0;
    if (performance.now() - t0 >= timeoutMs) return Number.POSITIVE_INFINITY;
    await sleep(50);
  }
}

/** A step is sustained when nearly everything offered was accepted, fast, with no refusal, and
 * the turns kept up (the sessions were idle again within `drainMs` of the last send). */
export function stable(step) {
  const errors = step.status429 + step.status503 + step.status5xx + step.otherStatus + step.noAnswer;
  return (
    step.accepted >= STABLE.acceptedShare * step.offeredRate * step.seconds &&
    step.notSent === 0 &&
    errors === 0 &&
    step.latency.p50 <= STABLE.p50Ms &&
    step.latency.p99 <= STABLE.p99Ms &&
    step.drainMs <= STABLE.drainMs
  );
}

/**
 * Reads every event of every target and checks that each accepted message was answered exactly
 * once: walking a session's log, each `user/message` opens its messageId's turn and every
 * `assistant/message` before the turn's end counts as an answer to it (and must be "echo: " +
 * the text that was sent). Lost: accepted, never answered. Duplicated: answered more than once.
 */
export async function verify(admin, targets, ledger) {
  const byId = new Map();
  for (const s of ledger) if (s.messageId) byId.set(s.messageId, s);
  const unacknowledged = new Map(ledger.filter((s) => !s.messageId).map((s) => [s.text, s]));
  const answers = new Map();
  let mismatched = 0;
  let unacknowledgedAnswered = 0;
  let foreign = 0;
  let events = 0;
  let pages = 0;
  const t0 = performance.now();
  await pool(targets.length, 4, Number.POSITIVE_INFINITY, async (k) => {
    const id = targets[k].id;
    let current;
    for (let after = -1; ; ) {
      const page = (
        await admin.call("GET", `/v1/sessions/${id}/events?after=${after}&limit=500`, undefined, 200)
      ).body;
      pages++;
      for (const event of page.events) {
        events++;
        if (event.type === "user/message") {
          current = event.data.messageId;
          const text = textOf(event.data.content);
          if (!byId.has(current)) {
            if (unacknowledged.has(text)) unacknowledgedAnswered++;
            else foreign++;
          }
        } else if (event.type === "assistant/message") {
          if (current === undefined) {
            foreign++;
            continue;
          }
          answers.set(current, (answers.get(current) ?? 0) + 1);
          const sent = byId.get(current);
          if (sent && textOf(event.data.content) !== `echo: ${sent.text}`) mismatched++;
        } else if (event.type === "turn/end") {
          current = undefined;
        }
      }
      if (page.next === null) break;
      after = page.next;
    }
  });
  let lost = 0;
  let duplicated = 0;
  for (const id of byId.keys()) {
    const n = answers.get(id) ?? 0;
    if (n === 0) lost++;
    else if (n > 1) duplicated++;
  }
  return {
    accepted: byId.size,
    answeredOnce: [...byId.keys()].filter((id) => answers.get(id) === 1).length,
    lost,
    duplicated,
    mismatched,
    unacknowledged: unacknowledged.size,
    unacknowledgedAnswered,
    foreign,
    events,
    pages,
    readMs: Math.round(performance.now() - t0),
  };
}

function textOf(content) {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((b) => (b.type === "text" ? b.text : "")).join("") : "";
}

/**
 * The whole load test: `sessions` new sessions; a brief step-up through `steps` (msgs/s, each
 * for `stepSeconds`, the sessions drained between steps; a step that misses is tried once more)
 * that stops at the first step that is not sustained; then `holdSeconds` one step below the
 * highest sustained rate (a short step can pass at a rate the machine cannot keep up for a
 * minute: a queue takes longer than a step to build; the lowest step if none or only it was
 * sustained); then drain and verify every message sent in the test, steps included.
 */
export async function loadTest(admin, { sessions, steps, stepSeconds, holdSeconds, drainTimeoutMs, log }) {
  const targets = [];
  for (let k = 0; k < sessions; k++)
    targets.push({ id: (await admin.createSession({ label: `bench-load-${k}` })).id });
  const ledger = [];
  // one message each first: every session object is open and warm before the clock starts
  await Promise.all(
    targets.map(async (t) => {
      const { messageId } = await admin.send(t.id, "warm-up");
      ledger.push({ session: t.id, text: "warm-up", status: 202, messageId });
    }),
  );
  await drain(admin, targets, drainTimeoutMs);
  const tried = [];
  let chosen;
  for (const rate of steps) {
    // a step that misses is tried once more: one burst of outside load should not decide
    let step;
    for (let attempt = 1; attempt <= 2; attempt++) {
      step = await offer(admin, targets, {
        rate,
        seconds: stepSeconds,
        label: `step${rate}.${attempt}`,
        ledger,
      });
      step.drainMs = await drain(admin, targets, drainTimeoutMs);
      step.stable = stable(step);
      step.attempt = attempt;
      tried.push(step);
      log?.(
        `  step ${rate}/s (try ${attempt}): ${step.accepted}/${step.sent} accepted, ` +
          `p50 ${step.latency.p50.toFixed(1)} ms, p99 ${step.latency.p99.toFixed(1)} ms, ` +
          `idle ${Number.isFinite(step.drainMs) ? Math.round(step.drainMs) : "-"} ms after, ` +
          `workerd ${step.cpu.workerdPct}% of a core, cpu pressure ${step.pressure?.cpuSomePct ?? "-"}%: ` +
          `${step.stable ? "sustained" : "not sustained"}`,
      );
      if (step.stable) break;
    }
    if (!step.stable) break;
    chosen = rate;
  }
  const highest = chosen === undefined ? -1 : steps.indexOf(chosen);
  const rate = steps[Math.max(0, highest - 1)];
  log?.(`  holding ${rate} msgs/s for ${holdSeconds} s over ${sessions} sessions`);
  const hold = await offer(admin, targets, { rate, seconds: holdSeconds, label: "hold", ledger });
  hold.drainMs = await drain(admin, targets, drainTimeoutMs);
  hold.stable = stable(hold);
  log?.("  reading every session's events");
  const check = await verify(admin, targets, ledger);
  return {
    sessions,
    steps: tried,
    chosenRate: rate,
    highestSustained: chosen,
    noneSustained: chosen === undefined,
    hold,
    check,
  };
}
