// Reads of a long log in bounded memory, against a real `wrangler dev` (README "Traces" and "Agents
// of other vendors: A2A"): the trace, A2A GetTask and ListTasks of a session whose log holds about
// 60 MB. Before these reads folded the log a page at a time, one trace read grew workerd by about
// 115 MB (four at once: 283 MB, past the 128 MB an isolate may use), GetTask answered the 61 MB
// task whole and ListTasks grew workerd by 150 MB. The bounds asserted are on memory and on
// answer sizes, never on time: workerd's resident memory, from outside, at its peak while four
// reads run at once, above what it settled at before them.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { api, createSession } from "./lib/api.mjs";
import { groupMembers, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";
import { mb, peakGrowth, settledRss } from "./lib/workerd-memory.mjs";

/** Each message is echoed by the scripted model: about 2 × 240 KiB of log per turn. */
const MESSAGE_CHARS = 240 * 1024;
const TURNS = 125;
const PAGE_BYTES = 4 * 1024 * 1024;
/**
 * The bound on workerd's growth while four reads run at once: a few pages of the log each and the
 * answer being built and sent (an A2A answer may itself be 4 MiB, and a GetTask reads the text of
 * up to 4 MiB of history and as much of results), far below one 60 MB log per read. Measured here:
 * trace ×4 +1.4 MB, GetTask ×4 +69 to +77 MB, ListTasks ×4 +4 MB; before the reads were bounded,
 * +283 MB (trace) and +271 MB (GetTask).
 */
const MAX_GROWTH_BYTES = 96 * 1024 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A raw request, its body's size in bytes and its parsed body. */
async function sized(server, path, init = {}) {
  const response = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.token}`, ...init.headers },
  });
  assert.equal(response.status, 200);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { bytes: bytes.length, body: JSON.parse(new TextDecoder().decode(bytes)) };
}

function a2a(server, method, params) {
  return sized(server, "/v1/a2a", {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
}

describe("reads of a 60 MB log (README: Traces; A2A)", { timeout: 900_000 }, () => {
  let server;
  let dir;
  let id;

  before(async () => {
    dir = tempDir();
    server = await startDevServer({ persistTo: dir });
    ({ id } = await createSession(server, { contextWindow: 1_000_000 }));
    for (let turn = 0; turn < TURNS; turn++) {
      const res = await api(server, "POST", `/v1/sessions/${id}/messages`, {
        body: { content: `${turn} ${"m".repeat(MESSAGE_CHARS)}` },
      });
      assert.equal(res.status, 202);
    }
    const deadline = Date.now() + 600_000;
    for (;;) {
      const view = await api(server, "GET", `/v1/sessions/${id}`);
      if (view.body.status === "idle" && view.body.lastSeq >= TURNS * 6 - 1) break;
      assert.ok(Date.now() < deadline, `the turns did not end: ${JSON.stringify(view.body)}`);
      await sleep(500);
    }
  });

  after(async () => {
    if (server) {
      const pgid = server.pgid;
      await server.stop();
      assert.deepEqual(groupMembers(pgid), [], "no wrangler or workerd process is left behind");
    }
    if (dir) removeDir(dir);
  });

  /** Four reads at once: each answer within 4 MiB, workerd's growth within the bound. */
  async function fourAtOnce(what, read) {
    const baseline = await settledRss(server.pgid);
    const { growth, value } = await peakGrowth(server.pgid, baseline, () =>
      Promise.all([read(), read(), read(), read()]),
    );
    console.log(`${what} ×4 of a ${TURNS}-turn log: workerd ${mb(baseline)} +${mb(growth)} at its peak`);
    for (const answer of value)
      assert.ok(answer.bytes <= PAGE_BYTES, `${what} answered ${answer.bytes} bytes`);
    assert.ok(
      growth < MAX_GROWTH_BYTES,
      `${what}: workerd grew by ${mb(growth)} (bound ${mb(MAX_GROWTH_BYTES)})`,
    );
    return value;
  }

  it("four trace reads at once stay within a few pages of memory", async () => {
    const [trace] = await fourAtOnce("GET …/trace", () => sized(server, `/v1/sessions/${id}/trace`));
    const spans = trace.body.resourceSpans[0].scopeSpans[0].spans;
    assert.equal(spans.filter((s) => s.name.startsWith("invoke_agent")).length, TURNS);
  });

  it("four A2A GetTask at once answer at most 4 MiB each, the newest messages, and say what they left out", async () => {
    const [task] = await fourAtOnce("GetTask", () => a2a(server, "GetTask", { id }));
    const result = task.body.result;
    assert.equal(result.status.state, "TASK_STATE_COMPLETED");
    assert.ok(result.metadata["subagents.omitted"].history > 0);
  });

  it("four A2A ListTasks at once answer at most 4 MiB each", async () => {
    const [listed] = await fourAtOnce("ListTasks", () =>
      a2a(server, "ListTasks", { pageSize: 50, historyLength: 100, includeArtifacts: true }),
    );
    assert.ok(listed.body.result.tasks.some((t) => t.id === id));
  });
});
