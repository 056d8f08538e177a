// The dashboard in a real browser (the packaged Chromium of lib/browser.mjs, driven by playwright-core) against
// `wrangler dev`: sign in, create a session, talk to it, start a continuable child, watch the tree,
// interrupt and follow up, compact a session's context, decide a child's pending approvals, add and
// delete a schedule, hold a message until a time, steer a running turn, delete sessions, show a
// session tree's trace as a waterfall, and check that what the page shows is what the API says.
//
// The screenshots go to test-results/dashboard.png and test-results/dashboard-trace.png; with
// UPDATE_SCREENSHOT=1 also to docs/dashboard.png and docs/trace.png (the committed ones the docs show).
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { build } from "esbuild";
import { assetsModule, bundle } from "../../ui/build.mjs";
import { allEvents, api } from "./lib/api.mjs";
import { launchBrowser } from "./lib/browser.mjs";
import { REPO_ROOT, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";
import { startOpenAiServer } from "../setup/openai-server.ts";

const STEP_MS = 20_000;
const SLOW = JSON.stringify({ script: [{ think: 10_000 }, { say: "slow" }] });
const ECHO_PING = { call: [{ tool: "echo", args: { text: "ping" } }] };
/** Calls echo, then (after that call's result) echo again, then answers: two approvals one after the other. */
const ECHO_TWICE = JSON.stringify({ script: [ECHO_PING, ECHO_PING, { say: "finished" }] });
/** Log events the transcript does not show (bookkeeping), as the dashboard decides. */
const SILENT = new Set(["turn/start", "agent/inbox/claimed", "subagent/descriptor"]);

/** A scripted step that calls `echo`. */
const echoStep = (text) => ({ call: [{ tool: "echo", args: text === undefined ? {} : { text } }] });
/** A child that thinks, looks something up twice and answers. */
const RESEARCHER = JSON.stringify({
  script: [
    { think: 600 },
    echoStep("look up"),
    { think: 500 },
    echoStep("cross-check"),
    { think: 300 },
    { say: "found it" },
  ],
});
/** A child that works longer, and whose second call fails (echo without its text): an error span. */
const CHECKER = JSON.stringify({
  script: [
    { think: 900 },
    echoStep("verify"),
    { think: 2500 },
    echoStep(undefined),
    { think: 400 },
    { say: "verified" },
  ],
});
/** A root that starts both children side by side (foreground `subagent` calls), then calls a tool itself. */
const TRACE_DEMO = JSON.stringify({
  script: [
    { think: 400 },
    {
      call: [
        { tool: "subagent", args: { description: "researcher", prompt: RESEARCHER } },
        { tool: "subagent", args: { description: "checker", prompt: CHECKER } },
      ],
    },
    { think: 300 },
    echoStep("summary"),
    { say: "both done" },
  ],
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `check` holds (or throws with the last value after `timeoutMs`). */
async function eventually(read, check, timeoutMs = STEP_MS, what = "a condition") {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await read();
    if (check(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(150);
  }
}

/** The client SDK (src/client), bundled as the package ships it, for calls made as a user's code would. */
async function importClientSdk() {
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: ["src/client/index.ts"],
    bundle: true,
    format: "esm",
    platform: "neutral",
    write: false,
    logLevel: "silent",
  });
  const code = Buffer.from(result.outputFiles[0].text).toString("base64");
  return import(`data:text/javascript;base64,${code}`);
}

/** Sends one message and waits until the session has ended one more turn. */
async function talk(server, id, content) {
  const turnEnds = async () => (await allEvents(server, id)).filter((e) => e.type === "turn/end").length;
  const before = await turnEnds();
  const sent = await api(server, "POST", `/v1/sessions/${id}/messages`, { body: { content } });
  assert.equal(sent.status, 202);
  await eventually(turnEnds, (n) => n > before, STEP_MS, `a turn to answer ${JSON.stringify(content)}`);
}

/** The dashboard's state for a descendant row (running / waiting / idle / settled). */
function shownStatus(entry) {
  if (entry.kind === "diagnostic") return "unavailable";
  if (entry.status === "running" || entry.status === "waiting") return entry.status;
  return entry.activity === "inactive" ? "settled" : "idle";
}

/** The event types a session's transcript should show, from the API's log. */
function expectedEntries(events) {
  return events
    .filter((e) => !SILENT.has(e.type))
    .filter((e) => !(e.type === "agent/inbox/inserted" && e.data.source.kind === "user"))
    .map((e) => `${e.seq}:${e.type}`);
}

async function shownEntries(page, id) {
  return page
    .locator(`[data-transcript-for="${id}"] [data-event-type]`)
    .evaluateAll((els) => els.map((el) => `${el.dataset.seq}:${el.dataset.eventType}`));
}

async function treeStatuses(page) {
  return page
    .locator("#tree [data-session-id]")
    .evaluateAll((els) => Object.fromEntries(els.map((el) => [el.dataset.sessionId, el.dataset.status])));
}

/** `at` as the dashboard shows a time ahead, in the browser's zone (ui/src/format.ts dateTime). */
function localTime(page, at) {
  return page.evaluate((t) => {
    const d = new Date(t);
    return d.toLocaleString([], {
      weekday: "short",
      ...(d.getFullYear() === new Date().getFullYear() ? {} : { year: "numeric" }),
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    });
  }, at);
}

/** The events of the turn that holds the event `seq` (from its turn/start through its turn/end). */
function turnAround(events, seq) {
  const at = events.findIndex((e) => e.seq === seq);
  let start = at;
  while (start > 0 && events[start].type !== "turn/start") start--;
  let end = at;
  while (end < events.length - 1 && events[end].type !== "turn/end") end++;
  return events.slice(start, end + 1);
}

/** The spans of a `/trace` answer (OTLP/HTTP JSON). */
function spansOf(trace) {
  return trace.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

/** A span attribute's value as JSON gives it (`intValue` a decimal string). */
function attr(span, key) {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

/** Nanoseconds (a decimal string) as ms. */
function ms(nanos) {
  return Number(BigInt(nanos) / 1000n) / 1000;
}

/**
 * The page's DOM contract: an element with `data-session-id` shows that session, with its status
 * (`data-status`); an element that only names a session (an approval's asking session, a span's
 * agent, the delete box) says so another way. Answers the elements that break it.
 */
async function sessionsWithoutStatus(page) {
  return page
    .locator("[data-session-id]")
    .evaluateAll((els) => els.filter((el) => !el.dataset.status).map((el) => el.outerHTML.slice(0, 160)));
}

/** The trace's rows as the page shows them, in page order, with their label's indent and their bar's box in its lane. */
async function traceRows(page, id) {
  return page.locator(`#trace[data-trace-for="${id}"] .span-row`).evaluateAll((rows) =>
    rows.map((row) => {
      const track = row.querySelector(".span-track").getBoundingClientRect();
      const bar = row.querySelector(".span-bar").getBoundingClientRect();
      return {
        spanId: row.dataset.spanId,
        parentSpanId: row.dataset.parentSpanId,
        name: row.dataset.name,
        operation: row.dataset.operation,
        depth: Number(row.dataset.depth),
        startMs: Number(row.dataset.startMs),
        durationMs: Number(row.dataset.durationMs),
        error: row.dataset.error !== undefined,
        inProgress: row.dataset.inProgress !== undefined,
        inputTokens: row.dataset.inputTokens,
        outputTokens: row.dataset.outputTokens,
        costUsd: row.dataset.costUsd,
        indent: Number.parseFloat(getComputedStyle(row.querySelector(".span-label")).paddingLeft),
        duration: row.querySelector(".span-duration").textContent,
        text: row.querySelector(".span-label").textContent,
        colour: getComputedStyle(row.querySelector(".span-bar")).backgroundColor,
        track: {
          left: track.left,
          right: track.right,
          top: track.top,
          bottom: track.bottom,
          width: track.width,
        },
        bar: { left: bar.left, right: bar.right, top: bar.top, bottom: bar.bottom, width: bar.width },
      };
    }),
  );
}

/**
 * Checks the shown waterfall against the API's spans: a row per span with its parent, name and
 * times; rows in tree order (each row's parent is the nearest row above it one level up, a row
 * whose parent is not in the trace at the top level); durations as the API's; every bar inside its
 * lane, placed and sized on the axis from the earliest start to the latest end.
 */
function assertWaterfall(rows, spans) {
  assert.equal(rows.length, spans.length, "a row per span");
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  assert.deepEqual(new Set(rows.map((r) => r.spanId)), new Set(byId.keys()));
  const t0 = Math.min(...spans.map((s) => ms(s.startTimeUnixNano)));
  const t1 = Math.max(...spans.map((s) => ms(s.endTimeUnixNano)));
  const range = Math.max(t1 - t0, 1);
  const above = []; // the nearest row above at each depth
  for (const row of rows) {
    const span = byId.get(row.spanId);
    assert.equal(row.name, span.name);
    assert.equal(row.parentSpanId, span.parentSpanId);
    assert.equal(row.operation, attr(span, "gen_ai.operation.name"));
    assert.equal(row.error, span.status.code === 2, `${span.name}: marked as an error iff its status is`);
    assert.equal(row.inProgress, attr(span, "subagents.in_progress") === true);
    const parent = span.parentSpanId && byId.has(span.parentSpanId) ? span.parentSpanId : undefined;
    if (parent === undefined) assert.equal(row.depth, 0, `${span.name} starts a tree`);
    else {
      assert.ok(
        row.depth > 0 && above[row.depth - 1]?.spanId === parent,
        `${span.name} sits under its parent`,
      );
      assert.ok(row.indent > above[row.depth - 1].indent, `${span.name} is indented under its parent`);
    }
    above[row.depth] = row;
    above.length = row.depth + 1;
    const start = ms(span.startTimeUnixNano);
    const duration = ms(span.endTimeUnixNano) - start;
    assert.ok(row.durationMs >= 0, `${span.name}: a duration of ${row.durationMs} ms`);
    assert.ok(
      Math.abs(row.durationMs - duration) < 0.01,
      `${span.name}: ${row.durationMs} ms, the API ${duration} ms`,
    );
    assert.ok(Math.abs(row.startMs - (start - t0)) < 0.01, `${span.name} starts where the API says`);
    assert.match(row.duration, /^\d+(\.\d+)? (ms|s)$|^\d+ min \d\d s$/);
    const { bar, track } = row;
    assert.ok(
      bar.left >= track.left - 0.5 &&
        bar.right <= track.right + 0.5 &&
        bar.top >= track.top &&
        bar.bottom <= track.bottom,
      `${span.name}: the bar ${JSON.stringify(bar)} leaves its lane ${JSON.stringify(track)}`,
    );
    // 3px at least, so the shortest calls still show (and are kept inside the lane)
    const width = Math.max((duration / range) * track.width, 3);
    const left = Math.min(((start - t0) / range) * track.width, track.width - 3);
    assert.ok(Math.abs(bar.width - width) <= 1.5, `${span.name}: ${bar.width}px wide, not ${width}px`);
    assert.ok(
      Math.abs(bar.left - track.left - left) <= 1.5,
      `${span.name}: starts at ${bar.left - track.left}px, not ${left}px`,
    );
  }
}

/** Boxes of the tree rows' badges that overlap another badge or the row's label or id. */
async function overlappingBadges(page) {
  return page.locator("#tree [data-session-id]").evaluateAll((rows) => {
    const box = (el) => el.getBoundingClientRect();
    const apart = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
    const clashes = [];
    for (const row of rows) {
      const badges = [...row.querySelectorAll(".badge")];
      const others = [...row.querySelectorAll(".node-label, .node-id, .node-meta")];
      for (const [i, badge] of badges.entries()) {
        for (const other of [...badges.slice(i + 1), ...others]) {
          if (!apart(box(badge), box(other))) clashes.push(`${badge.className} / ${other.className}`);
        }
      }
    }
    return clashes;
  });
}

describe("the dashboard in a real browser", { timeout: 300_000 }, () => {
  let server;
  let model;
  let dir;
  let profile;
  let context;
  let page;
  let sessionId;
  let childId;

  before(async () => {
    dir = tempDir();
    profile = tempDir("subagents-chromium-");
    // a model that reports usage (an OpenAI-compatible server), so the tree shows token badges
    model = await startOpenAiServer();
    server = await startDevServer({ persistTo: dir, vars: { OPENAI_BASE_URL: model.baseUrl } });
    context = await launchBrowser(profile, {
      viewport: { width: 1280, height: 860 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(STEP_MS);
  });

  after(async () => {
    await context?.close().catch(() => {});
    await server?.stop();
    await model?.close();
    if (dir) removeDir(dir);
    if (profile) removeDir(profile);
  });

  it("serves the embedded dashboard, which matches its sources, and not the sources themselves", async () => {
    const committed = readFileSync(join(REPO_ROOT, "src/worker/dashboard-assets.ts"), "utf8");
    assert.ok(
      committed === (await assetsModule()),
      "src/worker/dashboard-assets.ts is stale: run `npm run build:ui`",
    );
    const app = await fetch(`${server.url}/app.js`);
    assert.equal(app.status, 200);
    assert.match(app.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.ok((await app.text()) === (await bundle()), "the served app.js is the bundle of ui/src");
    for (const path of ["/src/main.ts", "/build.mjs", "/tsconfig.json"]) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 404, path);
    }
  });

  it("refuses a wrong token with the server's error and stays on the sign-in form", async () => {
    await page.goto(server.url);
    await page.fill('input[name="token"]', "not-the-token");
    await page.press('input[name="token"]', "Enter");
    await page.waitForSelector('#error[data-error-code="UNAUTHENTICATED"]');
    assert.match(await page.textContent("#error"), /UNAUTHENTICATED \(401\)/);
    assert.equal(await page.isVisible('input[name="token"]'), true);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  });

  it("signs in with the admin token on Enter and keeps it only in this tab's sessionStorage", async () => {
    await page.fill('input[name="token"]', server.token);
    await page.press('input[name="token"]', "Enter");
    await page.waitForSelector("#dashboard:not([hidden])");
    const stored = await page.evaluate(() => ({
      session: Object.values(sessionStorage),
      local: localStorage.length,
      cookie: document.cookie,
    }));
    assert.deepEqual(stored, { session: [server.token], local: 0, cookie: "" });
    assert.ok(!page.url().includes(server.token), "the token is not in the URL");
    assert.deepEqual(await context.cookies(), []);
  });

  it("creates a session, sends a message and shows the answer", async () => {
    await page.fill('#new-session input[name="label"]', "browser demo");
    await page.click('[data-action="create-session"]');
    const transcript = page.locator("[data-transcript-for]");
    await transcript.waitFor();
    sessionId = await transcript.getAttribute("data-transcript-for");
    const listed = await api(server, "GET", "/v1/sessions?limit=50");
    assert.ok(listed.body.sessions.some((s) => s.id === sessionId && s.label === "browser demo"));
    await page.waitForSelector(`#session-list [data-session-id="${sessionId}"][data-status="idle"]`);

    await page.fill('textarea[name="content"]', "hello from the browser");
    await page.press('textarea[name="content"]', "Enter");
    const answer = page.locator(`[data-transcript-for="${sessionId}"] [data-event-type="assistant/message"]`);
    await answer.waitFor();
    assert.match(await answer.textContent(), /echo: hello from the browser/);
    assert.equal(
      await page.locator(`[data-transcript-for="${sessionId}"] [data-event-type="user/message"]`).count(),
      1,
    );
  });

  it("starts a continuable child and the tree shows it running, as the API says", async () => {
    await page.click("details.start > summary");
    await page.selectOption('form[data-form="start"] select[name="provider"]', "spawn");
    await page.selectOption('form[data-form="start"] select[name="mode"]', "continuable");
    await page.fill('form[data-form="start"] input[name="label"]', "slow worker");
    await page.fill('form[data-form="start"] textarea[name="prompt"]', SLOW);
    await page.click('[data-action="start-child"]');

    const entries = await eventually(
      async () => (await api(server, "GET", `/v1/sessions/${sessionId}/descendants`)).body.entries,
      (es) => es.length === 1,
      STEP_MS,
      "the child in the API's listing",
    );
    childId = entries[0].id;
    assert.deepEqual(
      {
        mode: entries[0].mode,
        label: entries[0].label,
        provider: entries[0].provider,
        depth: entries[0].depth,
      },
      { mode: "continuable", label: "slow worker", provider: "spawn", depth: 1 },
    );
    const node = page.locator(`#tree [data-session-id="${childId}"]`);
    await page.waitForSelector(`#tree [data-session-id="${childId}"][data-status="running"]`);
    assert.equal(await node.getAttribute("data-mode"), "continuable");
    assert.equal(await node.getAttribute("data-provider"), "spawn");
    assert.equal(await node.getAttribute("data-depth"), "1");
    assert.match(await node.textContent(), /slow worker/);
    const api1 = (await api(server, "GET", `/v1/sessions/${sessionId}/descendants`)).body.entries[0];
    assert.equal(shownStatus(api1), "running", "the API agrees the child is running");
    await page.waitForSelector(`#tree [data-session-id="${sessionId}"][data-status="waiting"]`);
    assert.equal((await api(server, "GET", `/v1/sessions/${sessionId}`)).body.status, "waiting");
  });

  it("interrupts the child from its page and the tree shows it settled, as the API says", async () => {
    await page.click(`#tree [data-session-id="${childId}"] button`);
    await page.waitForSelector(`[data-transcript-for="${childId}"] [data-event-type="user/message"]`);
    await page.click('[data-action="interrupt"]');
    await page.waitForSelector(`#tree [data-session-id="${childId}"][data-status="settled"]`);
    await page.waitForSelector(
      `[data-transcript-for="${childId}"] [data-event-type="turn/end"].reason-aborted`,
    );
    const entry = (await api(server, "GET", `/v1/sessions/${sessionId}/descendants`)).body.entries[0];
    assert.equal(shownStatus(entry), "settled");
    assert.equal(entry.activity, "inactive");
  });

  it("follows up the settled child and shows its answer in the child's transcript", async () => {
    await page.fill('textarea[name="content"]', "once more");
    await page.click('[data-action="follow-up"]');
    const answer = page.locator(`[data-transcript-for="${childId}"] [data-event-type="assistant/message"]`);
    await answer.waitFor();
    assert.match(await answer.textContent(), /echo: once more/);
    const log = await allEvents(server, childId);
    assert.ok(log.some((e) => e.type === "user/message" && e.data.content[0].text === "once more"));
  });

  it("shows the parent's lifecycle edges and settlement notices, entry for entry as in the log", async () => {
    await page.click(`#tree [data-session-id="${sessionId}"] button`);
    await page.waitForSelector(`[data-transcript-for="${sessionId}"] [data-source="subagent-settled"]`);
    await page.waitForSelector(`#tree [data-session-id="${sessionId}"][data-status="idle"]`);
    const expected = await eventually(
      async () => expectedEntries(await allEvents(server, sessionId)),
      (es) => es.filter((e) => e.endsWith("turn/end")).length >= 3,
      STEP_MS,
      "the parent's turns after two settlements",
    );
    await eventually(
      () => shownEntries(page, sessionId),
      (shown) => JSON.stringify(shown) === JSON.stringify(expected),
      STEP_MS,
      `the transcript to show ${JSON.stringify(expected)}`,
    );
    for (const type of ["subagent/start", "subagent/end"]) {
      assert.ok(
        await page.locator(`[data-transcript-for="${sessionId}"] [data-event-type="${type}"]`).count(),
      );
    }
    const entries = (await api(server, "GET", `/v1/sessions/${sessionId}/descendants`)).body.entries;
    const root = (await api(server, "GET", `/v1/sessions/${sessionId}`)).body;
    const apiView = {
      [sessionId]: root.status,
      ...Object.fromEntries(entries.map((e) => [e.id, shownStatus(e)])),
    };
    await eventually(
      () => treeStatuses(page),
      (shown) => JSON.stringify(shown) === JSON.stringify(apiView),
      STEP_MS,
      `the tree to match the API ${JSON.stringify(apiView)}`,
    );
  });

  it("takes a screenshot of the whole story", async () => {
    // one more child that reports, so the picture shows every kind of entry
    const reporting = JSON.stringify({
      script: [{ call: [{ tool: "report", args: { output: "half way" } }] }, { say: "42" }],
    });
    await page.fill('form[data-form="start"] input[name="label"]', "reporter");
    await page.fill('form[data-form="start"] textarea[name="prompt"]', reporting);
    await page.click('[data-action="start-child"]');
    await page.waitForSelector(`[data-transcript-for="${sessionId}"] [data-source="subagent-report"]`);
    await eventually(
      () => treeStatuses(page),
      (s) => Object.keys(s).length === 3 && Object.values(s).every((v) => v === "idle" || v === "settled"),
      STEP_MS,
      "the reporter to settle",
    );
    // and one still at work, so the tree shows every state
    await page.fill('form[data-form="start"] input[name="label"]', "long task");
    await page.fill('form[data-form="start"] textarea[name="prompt"]', SLOW);
    await page.click('[data-action="start-child"]');
    const shown = await eventually(
      () => treeStatuses(page),
      (s) => Object.values(s).includes("running") && s[sessionId] === "waiting",
      STEP_MS,
      "a running child under a waiting root",
    );
    assert.deepEqual(Object.values(shown).sort(), ["running", "settled", "settled", "waiting"]);
    // the picture: the start form folded, no toast, the transcript from the report on
    await page.click("details.start > summary");
    await page.evaluate(() => {
      document.getElementById("note").hidden = true;
      const transcript = document.querySelector("[data-transcript-for]");
      const starts = transcript.querySelectorAll('[data-event-type="subagent/start"]');
      const last = starts[starts.length - 2];
      transcript.scrollTop = last.offsetTop - transcript.offsetTop - 8;
      window.scrollTo(0, 0);
    });
    await page.waitForTimeout(300);
    mkdirSync(join(REPO_ROOT, "test-results"), { recursive: true });
    const shot = join(REPO_ROOT, "test-results", "dashboard.png");
    await page.screenshot({ path: shot });
    if (process.env.UPDATE_SCREENSHOT === "1") copyFileSync(shot, join(REPO_ROOT, "docs", "dashboard.png"));
  });

  it("fits a phone screen without sideways scrolling", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
    assert.equal(await page.isVisible(`#tree [data-session-id="${childId}"]`), true);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("starts a one-shot child whose run settles, in the tree and the transcript as in the API", async () => {
    await page.click("details.start > summary");
    await page.selectOption('form[data-form="start"] select[name="mode"]', "one-shot");
    await page.fill('form[data-form="start"] input[name="label"]', "quick");
    await page.fill(
      'form[data-form="start"] textarea[name="prompt"]',
      JSON.stringify({ script: [{ say: "done" }] }),
    );
    await page.click('[data-action="start-child"]');
    const entries = await eventually(
      async () => (await api(server, "GET", `/v1/sessions/${sessionId}/descendants`)).body.entries,
      (es) => es.some((e) => e.mode === "one-shot" && shownStatus(e) === "settled"),
      STEP_MS,
      "the one-shot child to settle",
    );
    const quick = entries.find((e) => e.mode === "one-shot");
    assert.equal(quick.label, "quick");
    await page.waitForSelector(
      `#tree [data-session-id="${quick.id}"][data-status="settled"][data-mode="one-shot"]`,
    );
    const end = page.locator(`[data-transcript-for="${sessionId}"] [data-event-type="subagent/end"]`).last();
    await end.waitFor();
    assert.match(await end.textContent(), /completed[\s\S]*done/);
  });

  it("shows a session made elsewhere in the list without a reload", async () => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "made by curl" } });
    assert.equal(made.status, 201);
    await page.waitForSelector(`#session-list [data-session-id="${made.body.id}"][data-status="idle"]`);
  });

  it("shows a session's MCP servers and an MCP client's calls, never a server's token", async () => {
    const secret = `mcp-token-${crypto.randomUUID()}`;
    const made = await api(server, "POST", "/v1/sessions", {
      body: {
        label: "with mcp",
        mcpServers: [{ name: "docs", url: "https://mcp.example.com/mcp", token: secret }],
      },
    });
    assert.equal(made.status, 201);
    // an MCP client's call on the session (raw JSON-RPC, a 2025 client)
    const call = await fetch(`${server.url}/v1/sessions/${made.body.id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${made.body.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "echo", arguments: { text: "from mcp" } },
      }),
    });
    assert.equal(call.status, 200);
    await page.click(`#session-list [data-session-id="${made.body.id}"] button`);
    await page.waitForSelector('#session-meta [data-mcp-servers="docs"]');
    await page.waitForSelector(`[data-transcript-for="${made.body.id}"] [data-event-type="mcp/result"]`);
    const html = await page.content();
    assert.ok(!html.includes(secret), "the token is nowhere on the page");
  });

  it("a session token signs in straight to its own session, in a new tab that knows no token", async () => {
    const created = await api(server, "POST", "/v1/sessions", { body: { label: "token user" } });
    assert.equal(created.status, 201);
    const tab = await context.newPage();
    try {
      await tab.goto(server.url);
      await tab.waitForSelector('input[name="token"]'); // sessionStorage is per tab: signed out here
      await tab.fill('input[name="token"]', created.body.token);
      await tab.press('input[name="token"]', "Enter");
      await tab.waitForSelector(`[data-transcript-for="${created.body.id}"]`);
      await tab.waitForSelector(`#tree [data-session-id="${created.body.id}"][data-status="idle"]`);
      assert.equal(await tab.isVisible("#sessions-panel"), false, "no directory for a session token");
      await tab.fill('textarea[name="content"]', "hi");
      await tab.press('textarea[name="content"]', "Enter");
      await tab.waitForSelector(
        `[data-transcript-for="${created.body.id}"] [data-event-type="assistant/message"]`,
      );
      await tab.reload();
      await tab.waitForSelector(
        `[data-transcript-for="${created.body.id}"] [data-event-type="assistant/message"]`,
      );
      await tab.click("#sign-out");
      await tab.waitForSelector('input[name="token"]');
      assert.equal(await tab.evaluate(() => sessionStorage.length), 0);
    } finally {
      await tab.close();
    }
  });

  it("shows the tree's token total, its status and token badges laid out apart on a desktop and a phone screen", async () => {
    const made = await api(server, "POST", "/v1/sessions", {
      body: { label: "a model that counts its tokens", model: "openai:gpt-test" },
    });
    assert.equal(made.status, 201);
    const sent = await api(server, "POST", `/v1/sessions/${made.body.id}/messages`, {
      body: { content: "hi" },
    });
    assert.equal(sent.status, 202);
    await page.click(`#session-list [data-session-id="${made.body.id}"] button`);
    const row = `#tree [data-session-id="${made.body.id}"]`;
    await page.waitForSelector(`${row}[data-tokens] .badge.tokens`);
    // the figure is the tree's total as the API gives it
    const listing = await api(server, "GET", `/v1/sessions/${made.body.id}/descendants`);
    const total = listing.body.subtreeUsage.inputTokens + listing.body.subtreeUsage.outputTokens;
    assert.ok(total > 0);
    assert.equal(await page.getAttribute(row, "data-tokens"), String(total));
    for (const [name, viewport] of [
      ["desktop", { width: 1280, height: 860 }],
      ["phone", { width: 390, height: 844 }],
    ]) {
      await page.setViewportSize(viewport);
      await page.waitForTimeout(200);
      assert.deepEqual(await overlappingBadges(page), [], `badges overlap on the ${name} screen`);
      await page
        .locator("#tree")
        .screenshot({ path: join(REPO_ROOT, "test-results", `dashboard-tree-${name}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("marks a compaction in the transcript with its trigger, its token figures and its summary folded", async () => {
    const made = await api(server, "POST", "/v1/sessions", {
      body: { label: "compacted", model: "scripted" },
    });
    assert.equal(made.status, 201);
    const id = made.body.id;
    for (const content of ["first question", "second question", "third question"]) {
      await talk(server, id, content);
    }
    const { SubagentsClient } = await importClientSdk();
    const client = new SubagentsClient({ baseUrl: server.url, token: server.token });
    assert.deepEqual(await client.compact(id), { accepted: true });
    const log = await eventually(
      () => allEvents(server, id),
      (events) => events.some((e) => e.type === "context/compacted"),
      STEP_MS,
      "a context/compacted event in the log",
    );
    const event = log.find((e) => e.type === "context/compacted");
    assert.equal(event.data.trigger, "request");
    assert.ok(event.data.summary.length > 0, "the summary has text");

    await page.click(`#session-list [data-session-id="${id}"] button`);
    const marker = page.locator(`[data-transcript-for="${id}"] [data-event-type="context/compacted"]`);
    await marker.waitFor();
    assert.deepEqual(await marker.evaluate((el) => ({ ...el.dataset })), {
      eventType: "context/compacted",
      seq: String(event.seq),
      trigger: "request",
      throughSeq: String(event.data.throughSeq),
      tokensBefore: String(event.data.tokensBefore),
      tokensAfter: String(event.data.tokensAfter),
    });
    const [before, afterwards] = await page.evaluate(
      ([b, a]) => [b.toLocaleString(), a.toLocaleString()],
      [event.data.tokensBefore, event.data.tokensAfter],
    );
    const line = await marker.textContent();
    assert.match(line, /context compacted \(request\)/);
    assert.ok(line.includes(`${before} → ${afterwards} tokens (estimated)`), line);
    if (event.data.usage) {
      const { inputTokens, outputTokens } = event.data.usage;
      const [input, output] = await page.evaluate(
        ([i, o]) => [i.toLocaleString(), o.toLocaleString()],
        [inputTokens, outputTokens],
      );
      assert.ok(line.includes(`summary call ${input} in / ${output} out`), line);
    }
    // the log keeps everything: every earlier entry is still in the transcript
    const expected = expectedEntries(await allEvents(server, id));
    await eventually(
      () => shownEntries(page, id),
      (shown) => JSON.stringify(shown) === JSON.stringify(expected),
      STEP_MS,
      `the transcript to show ${JSON.stringify(expected)}`,
    );

    const summary = marker.locator("details.compaction-summary");
    const summaryText = summary.locator(".text");
    assert.equal(await summary.evaluate((el) => el.open), false, "the summary starts folded");
    assert.equal(await summaryText.isVisible(), false, "a folded summary is not shown");
    await summary.locator("summary").click();
    await summaryText.waitFor({ state: "visible" });
    assert.equal(await summaryText.textContent(), event.data.summary);
  });

  it("lists a child's pending approval at the root, denies it with a reason and approves the next from the page", async () => {
    const made = await api(server, "POST", "/v1/sessions", {
      body: { label: "approvals", model: "scripted", requireApproval: ["echo"] },
    });
    assert.equal(made.status, 201);
    const rootId = made.body.id;
    const started = await api(server, "POST", `/v1/sessions/${rootId}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "asker", prompt: ECHO_TWICE },
    });
    assert.equal(started.status, 202);
    const askerId = started.body.childId;
    const pendingAtRoot = async () =>
      (await api(server, "GET", `/v1/sessions/${rootId}/approvals`)).body.approvals;
    const toolResults = async () =>
      (await allEvents(server, askerId)).filter((e) => e.type === "tool/result" && e.data.name === "echo");

    await page.click(`#session-list [data-session-id="${rootId}"] button`);
    // with the approval listed and asked in the transcript, and the delete box shown, every element
    // that carries a session id is one that shows that session, with its status
    await page.waitForSelector("#approvals .approval-item");
    await page.waitForSelector(
      `[data-transcript-for="${rootId}"] [data-event-type="approval/requested"][data-pending="true"]`,
    );
    await page.waitForSelector(".delete-session");
    assert.deepEqual(await sessionsWithoutStatus(page), []);
    // the root's panel names the child that asked, the tool and its arguments
    const row = page.locator(`#approvals .approval-item[data-asking-session="${askerId}"]`);
    await row.waitFor();
    const [first] = await pendingAtRoot();
    assert.equal(first.sessionId, askerId);
    assert.equal(await row.getAttribute("data-approval-id"), first.approvalId);
    assert.equal(await row.getAttribute("data-tool"), "echo");
    const shown = await row.textContent();
    assert.match(shown, /asked by asker \(/);
    assert.ok(shown.includes('{"text":"ping"}'), shown);
    await page.waitForSelector(
      `#tree [data-session-id="${askerId}"][data-pending-approvals="1"] .badge.approval`,
    );
    // the root's transcript has the request (it travelled up), with controls while it is pending
    const asked = (id) =>
      `[data-transcript-for="${rootId}"] [data-event-type="approval/requested"][data-approval-id="${id}"]`;
    await page.waitForSelector(`${asked(first.approvalId)}[data-pending="true"] [data-action="deny"]`);
    assert.equal(await page.getAttribute(asked(first.approvalId), "data-asking-session"), askerId);
    assert.equal(await page.getAttribute(".delete-session", "data-target-session"), rootId);
    await page.screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-approvals.png") });
    // and on a phone screen, still without sideways scrolling
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
    assert.deepEqual(await overlappingBadges(page), [], "the tree's badges overlap on a phone screen");
    await page.screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-approvals-phone.png") });
    await page.setViewportSize({ width: 1280, height: 860 });

    // deny, with a reason, from the panel: the child's call is answered "denied: <reason>"
    await row.locator('input[name="reason"]').fill("not in prod");
    await row.locator('[data-action="deny"]').click();
    const [deniedResult] = await eventually(
      toolResults,
      (rs) => rs.length === 1,
      STEP_MS,
      "the denied call's result",
    );
    assert.equal(deniedResult.data.isError, true);
    assert.ok(
      deniedResult.data.content[0].text.startsWith("denied: not in prod"),
      deniedResult.data.content[0].text,
    );
    const decided = (await allEvents(server, askerId)).filter((e) => e.type === "approval/decided");
    assert.deepEqual(
      decided.map((e) => e.data),
      [{ approvalId: first.approvalId, decision: "deny", reason: "not in prod", by: "admin" }],
    );
    const denial = page.locator(
      `[data-transcript-for="${rootId}"] [data-event-type="approval/decided"][data-approval-id="${first.approvalId}"]`,
    );
    await denial.waitFor();
    assert.equal(await denial.getAttribute("data-decision"), "deny");
    assert.match(await denial.textContent(), /Denied[\s\S]*not in prod/);
    await page.waitForSelector(`${asked(first.approvalId)}[data-pending="false"]`);
    assert.equal(await page.locator(`${asked(first.approvalId)} .approval-actions`).count(), 0);

    // the child's next call asks again: approve it from the child's own transcript, and it runs
    const [second] = await eventually(
      pendingAtRoot,
      (as) => as.length === 1 && as[0].approvalId !== first.approvalId,
      STEP_MS,
      "the second approval",
    );
    await page.waitForSelector(`#approvals [data-approval-id="${second.approvalId}"]`);
    await page.click(`#tree [data-session-id="${askerId}"] button`);
    const own = `[data-transcript-for="${askerId}"] [data-event-type="approval/requested"][data-approval-id="${second.approvalId}"]`;
    await page.click(`${own}[data-pending="true"] [data-action="approve"]`);
    const results = await eventually(
      toolResults,
      (rs) => rs.length === 2,
      STEP_MS,
      "the approved call's result",
    );
    assert.deepEqual(
      { isError: results[1].data.isError, text: results[1].data.content[0].text },
      { isError: false, text: "ping" },
    );
    await page.waitForSelector(
      `[data-transcript-for="${askerId}"] [data-event-type="approval/decided"][data-approval-id="${second.approvalId}"][data-decision="approve"]`,
    );
    // nothing waits any more: the list is empty (the panel hides) and the tree's badge is gone
    await page.waitForSelector("#approvals-panel[hidden]", { state: "attached" });
    assert.equal(await page.locator("#approvals [data-approval-id]").count(), 0);
    await page.waitForSelector(`#tree [data-session-id="${askerId}"]:not([data-pending-approvals])`);
    assert.equal(await page.locator(`${own} .approval-actions`).count(), 0);
    assert.deepEqual(await pendingAtRoot(), []);
  });

  it("adds a schedule from the page, lists it with its next firing in local time, refuses a malformed cron with the server's error, and deletes it", async () => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "scheduled" } });
    assert.equal(made.status, 201);
    const id = made.body.id;
    const listed = async () => (await api(server, "GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    await page.click(`#session-list [data-session-id="${id}"] button`);
    const panel = page.locator(`#schedules[data-schedule-for="${id}"]`);
    await panel.waitFor({ state: "attached" });
    await page.waitForSelector(`#schedules[data-schedule-for="${id}"] .schedule-list .empty`, {
      state: "attached",
    });
    await panel.locator("summary").click();
    const form = panel.locator('form[data-form="schedule"]');
    assert.equal(await form.locator('input[name="timezone"]').inputValue(), "UTC", "UTC unless changed");

    // a malformed cron: the server's 400 in the banner, nothing made
    await form.locator('input[name="cron"]').fill("every morning");
    await form.locator('textarea[name="message"]').fill("stand-up");
    await form.locator('[data-action="add-schedule"]').click();
    await page.waitForSelector('#error[data-error-code="INVALID_REQUEST"]');
    assert.match(await page.textContent("#error"), /adding a schedule: .*\(400\).*five-field cron/);
    assert.deepEqual(await listed(), []);
    assert.equal(await form.locator('input[name="cron"]').inputValue(), "every morning", "kept to fix");

    // a good one, in another zone: listed with its next firing as the API gives it, in local time
    await form.locator('input[name="cron"]').fill("30 9 * * 1-5");
    await form.locator('input[name="timezone"]').fill("Europe/Paris");
    await form.locator('[data-action="add-schedule"]').click();
    const row = panel.locator(".schedule-item");
    await row.waitFor();
    const [schedule] = await listed();
    assert.deepEqual(
      { cron: schedule.cron, timezone: schedule.timezone, text: schedule.content },
      { cron: "30 9 * * 1-5", timezone: "Europe/Paris", text: "stand-up" },
    );
    assert.ok(schedule.next > Date.now(), "the next firing is ahead");
    assert.deepEqual(await row.evaluate((el) => ({ ...el.dataset })), {
      scheduleId: schedule.scheduleId,
      cron: "30 9 * * 1-5",
      timezone: "Europe/Paris",
      next: String(schedule.next),
    });
    const next = row.locator(".schedule-next time");
    assert.equal(await next.getAttribute("datetime"), new Date(schedule.next).toISOString());
    assert.equal(await next.textContent(), await localTime(page, schedule.next));
    assert.match(await row.textContent(), /stand-up/);
    assert.equal(await page.isVisible("#error"), false, "a success clears the refusal");
    assert.equal(await form.locator('input[name="cron"]').inputValue(), "", "the form is ready for another");
    await page.waitForSelector(`#schedules[data-count="1"] summary .schedule-count`);
    // the transcript tells it readably: the cron, its zone and the first time
    const created = page.locator(
      `[data-transcript-for="${id}"] [data-event-type="schedule/created"][data-schedule-id="${schedule.scheduleId}"]`,
    );
    await created.waitFor();
    const createdText = await created.textContent();
    assert.match(createdText, /Schedule created[\s\S]*every 30 9 \* \* 1-5 \(Europe\/Paris\) · first /);
    assert.ok(createdText.includes(await localTime(page, schedule.next)), createdText);
    await page.screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-schedules.png") });
    // and on a phone screen, still without sideways scrolling
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
    await panel.screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-schedules-phone.png") });
    await page.setViewportSize({ width: 1280, height: 860 });

    // deleted from its row: gone from the list and the API, and the transcript says so
    await row.locator('[data-action="unschedule"]').click();
    await page.waitForSelector(`#schedules[data-schedule-for="${id}"][data-count="0"] .schedule-list .empty`);
    assert.deepEqual(await listed(), []);
    const deleted = page.locator(
      `[data-transcript-for="${id}"] [data-event-type="schedule/deleted"][data-schedule-id="${schedule.scheduleId}"]`,
    );
    await deleted.waitFor();
    assert.match(await deleted.textContent(), /Schedule deleted[\s\S]*deleted by admin/);
    await panel.locator("summary").click(); // folded again for the tests that follow
  });

  it("holds a message until its 'deliver at' time, shown in the transcript as a message scheduled", async () => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "held" } });
    assert.equal(made.status, 201);
    const id = made.body.id;
    await page.click(`#session-list [data-session-id="${id}"] button`);
    await page.waitForSelector(`[data-transcript-for="${id}"]`);
    // an hour from now, to the minute, as the browser's datetime-local field takes it
    const at = await page.evaluate(() => {
      const d = new Date(Date.now() + 3_600_000);
      d.setSeconds(0, 0);
      const pad = (n) => String(n).padStart(2, "0");
      const value = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
      return { value, ms: d.getTime() };
    });
    const form = page.locator('form[data-form="message"]');
    await form.locator('textarea[name="content"]').fill("later, please");
    await form.locator('input[name="notBefore"]').fill(at.value);
    await form.locator('textarea[name="content"]').press("Enter");
    const log = await eventually(
      () => allEvents(server, id),
      (events) => events.some((e) => e.type === "schedule/created"),
      STEP_MS,
      "the held message's schedule/created",
    );
    const created = log.find((e) => e.type === "schedule/created");
    assert.equal(created.data.next, at.ms);
    assert.equal(created.data.by, "caller");
    assert.ok(created.data.messageId, "a held message names its id");
    assert.equal(created.data.cron, undefined);
    assert.ok(!log.some((e) => e.type === "user/message"), "not delivered before its time");
    const entry = page.locator(`[data-transcript-for="${id}"] [data-event-type="schedule/created"]`);
    await entry.waitFor();
    assert.match(await entry.textContent(), /Message scheduled[\s\S]*delivered /);
    assert.ok((await entry.textContent()).includes(await localTime(page, at.ms)));
    assert.equal(await form.locator('input[name="notBefore"]').inputValue(), "", "the form is reset");
    // listed beside the session's schedules as a held message, not a recurring one
    const listed = (await api(server, "GET", `/v1/sessions/${id}/schedules`)).body.schedules;
    assert.deepEqual(
      listed.map(({ kind, next, content, messageId }) => ({ kind, next, content, messageId })),
      [{ kind: "message", next: at.ms, content: "later, please", messageId: created.data.messageId }],
    );
  });

  it("steers a running turn from the composer (next-step): the same turn reads the message and answers it", async () => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "steered" } });
    assert.equal(made.status, 201);
    const id = made.body.id;
    await page.click(`#session-list [data-session-id="${id}"] button`);
    await page.waitForSelector(`[data-transcript-for="${id}"]`);
    // a turn that thinks for a while before it answers
    const slow = JSON.stringify({ script: [{ think: 6_000 }, { say: "slow" }] });
    const sent = await api(server, "POST", `/v1/sessions/${id}/messages`, { body: { content: slow } });
    assert.equal(sent.status, 202);
    await page.waitForSelector(`[data-transcript-for="${id}"] [data-event-type="user/message"]`);
    await page.waitForSelector("#working:not([hidden])");
    const form = page.locator('form[data-form="message"]');
    await form.locator('select[name="delivery"]').selectOption("next-step");
    await form.locator('textarea[name="content"]').fill("turn left");
    await form.locator('[data-action="send"]').click();
    const log = await eventually(
      () => allEvents(server, id),
      (events) => events.some((e) => e.type === "turn/end"),
      STEP_MS,
      "the steered turn's end",
    );
    const steer = log.find((e) => e.type === "user/message" && e.data.content[0].text === "turn left");
    assert.ok(steer, "the steering message is in the log");
    const turn = turnAround(log, steer.seq);
    assert.deepEqual(
      turn.filter((e) => e.type === "turn/start" || e.type === "turn/end").map((e) => e.type),
      ["turn/start", "turn/end"],
      "one turn holds both messages",
    );
    assert.deepEqual(
      turn.filter((e) => e.type === "user/message").map((e) => e.data.content[0].text),
      [slow, "turn left"],
    );
    assert.deepEqual(
      turn.filter((e) => e.type === "assistant/message").map((e) => e.data.content[0]?.text),
      ["slow", "echo: turn left"],
    );
    assert.equal(turn.at(-1).data.reason, "completed");
    const inserted = log.find(
      (e) => e.type === "agent/inbox/inserted" && e.data.messageId === steer.data.messageId,
    );
    assert.equal(inserted?.data.lane, "next-step");
    // the page shows that turn entry for entry: the steer and its answer before the one turn end
    const expected = expectedEntries(await allEvents(server, id));
    await eventually(
      () => shownEntries(page, id),
      (shown) => JSON.stringify(shown) === JSON.stringify(expected),
      STEP_MS,
      `the transcript to show ${JSON.stringify(expected)}`,
    );
    const shownTypes = expected.map((e) => e.split(":")[1]);
    assert.equal(shownTypes.filter((t) => t === "turn/end").length, 1);
    assert.ok(
      shownTypes.lastIndexOf("user/message") < shownTypes.indexOf("turn/end"),
      "the steer is inside the turn",
    );
    const answer = page.locator(`[data-transcript-for="${id}"] [data-event-type="assistant/message"]`).last();
    assert.match(await answer.textContent(), /echo: turn left/);
    assert.equal(
      await form.locator('select[name="delivery"]').inputValue(),
      "next-turn",
      "reset after sending",
    );
  });

  it("deletes a session and its child from the page after a confirmation in the page; it leaves the list and every route answers 404", async (t) => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "to delete" } });
    assert.equal(made.status, 201);
    const id = made.body.id;
    const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
      body: {
        provider: "spawn",
        mode: "continuable",
        label: "doomed",
        prompt: JSON.stringify({ script: [{ say: "hi" }] }),
      },
    });
    assert.equal(started.status, 202);
    const child = started.body.childId;
    let dialogs = 0;
    const onDialog = (dialog) => {
      dialogs++;
      void dialog.dismiss();
    };
    page.on("dialog", onDialog);
    t.after(() => page.off("dialog", onDialog));
    await page.click(`#session-list [data-session-id="${id}"] button`);
    await page.waitForSelector(`#tree [data-session-id="${child}"]`);

    // the first click only asks, in the page; Cancel leaves everything as it was
    await page.click('[data-action="delete-session"]');
    const confirm = page.locator(".confirm-delete");
    await confirm.waitFor();
    assert.match(await confirm.textContent(), /Delete to delete \([0-9a-f]{8}\) and the session below it\?/);
    await page.screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-delete.png") });
    await page.click('[data-action="cancel-delete"]');
    await confirm.waitFor({ state: "detached" });
    assert.equal((await api(server, "GET", `/v1/sessions/${id}`)).status, 200);

    await page.click('[data-action="delete-session"]');
    await page.click('[data-action="confirm-delete"]');
    await page.waitForSelector(`#session-list [data-session-id="${id}"]`, { state: "detached" });
    await page.waitForSelector("#empty:not([hidden])");
    assert.equal(await page.isVisible("#session-panel"), false);
    assert.equal(await page.locator("#tree [data-session-id]").count(), 0);
    assert.equal(new URL(page.url()).hash, "", "the selection is gone from the URL");
    for (const gone of [id, child])
      assert.equal((await api(server, "GET", `/v1/sessions/${gone}`)).status, 404);
    await eventually(
      async () => (await api(server, "GET", "/v1/sessions?limit=100")).body.sessions.map((s) => s.id),
      (ids) => !ids.includes(id),
      STEP_MS,
      "the directory to forget the session",
    );
    // the list re-read from the API still lacks it, and the stream's end was no error
    await page.reload();
    await page.waitForSelector("#dashboard:not([hidden])");
    await page.waitForSelector("#session-list [data-session-id]");
    assert.equal(await page.locator(`#session-list [data-session-id="${id}"]`).count(), 0);
    assert.equal(await page.isVisible("#error"), false);
    assert.equal(dialogs, 0, "no window.confirm or alert");
  });

  it("a session token may not delete its own top-level session (a 403 notice) but deletes a session below it", async () => {
    const created = await api(server, "POST", "/v1/sessions", { body: { label: "token tree" } });
    assert.equal(created.status, 201);
    const { id, token } = created.body;
    const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
      body: {
        provider: "spawn",
        mode: "continuable",
        label: "leaf",
        prompt: JSON.stringify({ script: [{ say: "hi" }] }),
      },
    });
    assert.equal(started.status, 202);
    const child = started.body.childId;
    const tab = await context.newPage();
    tab.setDefaultTimeout(STEP_MS);
    try {
      await tab.goto(server.url);
      await tab.fill('input[name="token"]', token);
      await tab.press('input[name="token"]', "Enter");
      await tab.waitForSelector(`#tree [data-session-id="${child}"]`);
      await tab.click('[data-action="delete-session"]');
      await tab.click('[data-action="confirm-delete"]');
      await tab.waitForSelector('#error[data-error-code="UNAUTHORIZED"]');
      assert.match(await tab.textContent("#error"), /deleting token tree \([0-9a-f]{8}\): .*\(403\)/);
      await tab.waitForSelector('[data-action="delete-session"]'); // the confirmation folds back
      assert.equal((await api(server, "GET", `/v1/sessions/${id}`)).status, 200);
      assert.equal(await tab.isVisible(`[data-transcript-for="${id}"]`), true);

      // a session below it: deleted with the tree's token, the selection goes to its parent
      await tab.click(`#tree [data-session-id="${child}"] button`);
      await tab.waitForSelector(`[data-transcript-for="${child}"]`);
      await tab.click('[data-action="delete-session"]');
      await tab.click('[data-action="confirm-delete"]');
      await tab.waitForSelector(`[data-transcript-for="${id}"]`);
      assert.equal((await api(server, "GET", `/v1/sessions/${child}`)).status, 404);
      await tab.waitForSelector(`#tree [data-session-id="${child}"]`, { state: "detached" });
      assert.equal(
        await tab.isVisible("#error"),
        false,
        "the refusal was cleared and nothing else went wrong",
      );
    } finally {
      await tab.close();
    }
  });

  it("shows a session tree's trace as a waterfall: a row per span of the API's /trace, nested, on one time axis, live while the turn runs", async () => {
    const made = await api(server, "POST", "/v1/sessions", { body: { label: "trace demo" } });
    assert.equal(made.status, 201);
    const id = made.body.id;
    await page.waitForSelector(`#session-list [data-session-id="${id}"]`);
    await page.click(`#session-list [data-session-id="${id}"] button`);
    await page.waitForSelector(`[data-transcript-for="${id}"]`);
    await page.click('#session-views [data-view="trace"]');
    assert.equal(await page.getAttribute("#tab-trace", "aria-selected"), "true");
    assert.equal(await page.isVisible("#transcript"), false, "the trace takes the transcript's place");
    await page.waitForSelector(`#trace[data-trace-for="${id}"][data-spans="0"] .trace-empty`);

    // while the root waits for its children: its turn is marked running, and the page follows
    // the log with no click (the root's own spans, and its children's)
    const sent = await api(server, "POST", `/v1/sessions/${id}/messages`, { body: { content: TRACE_DEMO } });
    assert.equal(sent.status, 202);
    await page.waitForSelector(
      `#trace[data-trace-for="${id}"] .span-row[data-operation="invoke_agent"][data-in-progress] .badge.span-running`,
    );
    await page.waitForSelector(`#trace[data-trace-for="${id}"] .span-row[data-name="invoke_agent checker"]`);
    await eventually(
      async () => (await allEvents(server, id)).filter((e) => e.type === "turn/end").length,
      (n) => n === 1,
      STEP_MS,
      "the root's turn to end",
    );
    const trace = await api(server, "GET", `/v1/sessions/${id}/trace`);
    assert.equal(trace.status, 200);
    const spans = spansOf(trace.body);
    // what the scenario makes: three turns, the two children's under the calls that started them
    assert.equal(spans.filter((s) => attr(s, "gen_ai.operation.name") === "invoke_agent").length, 3);
    await page.waitForSelector(
      `#trace[data-trace-for="${id}"][data-spans="${spans.length}"]:not(:has(.span-row[data-in-progress]))`,
    );
    const rows = await traceRows(page, id);
    assertWaterfall(rows, spans);
    // a span names its agent, and is not a session of the page
    assert.deepEqual(await sessionsWithoutStatus(page), []);
    assert.ok((await page.locator(`#trace .span-row[data-agent-session="${id}"]`).count()) > 0);
    const byId = new Map(rows.map((r) => [r.spanId, r]));
    for (const child of ["researcher", "checker"]) {
      const row = rows.find((r) => r.name === `invoke_agent ${child}`);
      const call = byId.get(row.parentSpanId);
      assert.equal(
        call.name,
        "execute_tool subagent",
        `${child}'s turn hangs under the call that started it`,
      );
      assert.equal(row.depth, call.depth + 1);
      assert.ok(row.indent > call.indent);
      assert.ok(rows.indexOf(row) > rows.indexOf(call));
    }
    // agents, model calls and tool calls have a colour each (rows neither failed nor running)
    const colours = new Map();
    for (const r of rows.filter((r) => !r.error && !r.inProgress)) {
      colours.set(r.operation, [...new Set([...(colours.get(r.operation) ?? []), r.colour])]);
    }
    assert.deepEqual([...colours.keys()].sort(), ["chat", "execute_tool", "invoke_agent"]);
    for (const [op, seen] of colours) assert.equal(seen.length, 1, `one colour for ${op}: ${seen}`);
    assert.equal(new Set([...colours.values()].flat()).size, 3, "three different colours");
    // the failed call (echo without its text) is the one marked, with a badge
    const failed = rows.filter((r) => r.error);
    assert.deepEqual(
      failed.map((r) => r.name),
      spans.filter((s) => s.status.code === 2).map((s) => s.name),
    );
    assert.deepEqual(
      failed.map((r) => r.name),
      ["execute_tool echo"],
    );
    assert.match(failed[0].text, /error/);
    assert.match(
      await page.textContent(`#trace[data-trace-for="${id}"] .trace-summary`),
      new RegExp(`^${spans.length} spans · `),
    );

    // tokens as the spans carry them (a model that reports its usage)
    const counted = await api(server, "POST", "/v1/sessions", {
      body: { label: "traced tokens", model: "openai:gpt-test" },
    });
    assert.equal(counted.status, 201);
    await talk(server, counted.body.id, "use the tool");
    const countedSpans = spansOf((await api(server, "GET", `/v1/sessions/${counted.body.id}/trace`)).body);
    await page.waitForSelector(`#session-list [data-session-id="${counted.body.id}"]`);
    await page.click(`#session-list [data-session-id="${counted.body.id}"] button`);
    await page.waitForSelector(
      `#trace[data-trace-for="${counted.body.id}"][data-spans="${countedSpans.length}"]`,
    );
    const countedRows = await traceRows(page, counted.body.id);
    assertWaterfall(countedRows, countedSpans);
    const withUsage = countedSpans.filter((s) => attr(s, "gen_ai.usage.input_tokens") !== undefined);
    assert.ok(
      withUsage.some((s) => attr(s, "gen_ai.operation.name") === "chat"),
      "the model calls report tokens",
    );
    for (const span of countedSpans) {
      const row = countedRows.find((r) => r.spanId === span.spanId);
      const input = attr(span, "gen_ai.usage.input_tokens");
      const output = attr(span, "gen_ai.usage.output_tokens");
      assert.deepEqual([row.inputTokens, row.outputTokens], [input, output], span.name);
      if (input !== undefined) assert.ok(row.text.includes(`${input} in / ${output} out`), row.text);
    }
    // a cost on a span (`subagents.cost_usd`, USD) shows beside its tokens, and the model calls' sum
    // in the summary: the API's answer with a price on each model call
    const priced = structuredClone((await api(server, "GET", `/v1/sessions/${counted.body.id}/trace`)).body);
    for (const span of spansOf(priced))
      if (attr(span, "gen_ai.operation.name") === "chat")
        span.attributes.push({ key: "subagents.cost_usd", value: { doubleValue: 0.0012 } });
    const chats = countedSpans.filter((s) => attr(s, "gen_ai.operation.name") === "chat").length;
    await page.route(`**/v1/sessions/${counted.body.id}/trace`, (route) => route.fulfill({ json: priced }));
    try {
      await page.click('[data-action="refresh-trace"]');
      await page.waitForSelector(
        `#trace[data-trace-for="${counted.body.id}"] .span-row[data-cost-usd] .span-cost`,
      );
      const costs = await page
        .locator(`#trace[data-trace-for="${counted.body.id}"] .span-row[data-cost-usd]`)
        .evaluateAll((els) =>
          els.map((el) => [el.dataset.operation, el.querySelector(".span-cost").textContent]),
        );
      assert.deepEqual(costs, Array(chats).fill(["chat", "$0.0012"]));
      assert.equal(
        await page.textContent(`#trace[data-trace-for="${counted.body.id}"] .trace-cost`),
        `$${(0.0012 * chats).toFixed(4)}`,
      );
    } finally {
      await page.unroute(`**/v1/sessions/${counted.body.id}/trace`);
    }

    // back on the demo, the trace stays open (the tab is kept as sessions change)
    await page.click(`#session-list [data-session-id="${id}"] button`);
    await page.waitForSelector(`#trace[data-trace-for="${id}"][data-spans="${spans.length}"]`);
    assertWaterfall(await traceRows(page, id), spans);

    // the picture: the demo as its own token shows it (no directory: its tree beside its trace)
    const tab = await context.newPage();
    tab.setDefaultTimeout(STEP_MS);
    try {
      await tab.goto(server.url);
      await tab.fill('input[name="token"]', made.body.token);
      await tab.press('input[name="token"]', "Enter");
      await tab.waitForSelector(`[data-transcript-for="${id}"]`);
      await eventually(
        () => treeStatuses(tab),
        (s) => Object.keys(s).length === 3 && s[id] === "idle",
        STEP_MS,
        "the demo's tree of three",
      );
      await tab.click('#session-views [data-view="trace"]');
      await tab.waitForSelector(`#trace[data-trace-for="${id}"][data-spans="${spans.length}"]`);
      assertWaterfall(await traceRows(tab, id), spans);
      await tab.waitForTimeout(300);
      mkdirSync(join(REPO_ROOT, "test-results"), { recursive: true });
      const shot = join(REPO_ROOT, "test-results", "dashboard-trace.png");
      await tab.screenshot({ path: shot });
      if (process.env.UPDATE_SCREENSHOT === "1") copyFileSync(shot, join(REPO_ROOT, "docs", "trace.png"));
    } finally {
      await tab.close();
    }

    // on a phone screen: no sideways scrolling, each bar still on the one axis, inside its lane
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
    assertWaterfall(await traceRows(page, id), spans);
    await page
      .locator("#trace")
      .screenshot({ path: join(REPO_ROOT, "test-results", "dashboard-trace-phone.png") });
    await page.setViewportSize({ width: 1280, height: 860 });

    // back to the transcript, as the other views expect it
    await page.click('#session-views [data-view="transcript"]');
    await page.waitForSelector(`[data-transcript-for="${id}"]`);
    assert.equal(await page.isVisible("#trace"), false);
  });
});
