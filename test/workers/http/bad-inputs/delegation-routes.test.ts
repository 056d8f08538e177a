import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN,
  api,
  type ApiResult,
  createSession,
  fetchWorker,
  field,
  request,
  rpc,
  rpcOutcome,
  sendMessage,
} from "../../../support/api";
import {
  GHOST,
  HTTP_CASES,
  ONE_SHOT,
  P,
  REMOTE,
  RPC_CASES,
  type World,
} from "../../../support/bad-inputs/delegation-cases";
import { BodyGenerator, prng } from "../../../support/bad-inputs/malformed-bodies";
import { sleep, waitForEvents, waitForTurnEnds } from "../../../support/logs";
import { dumpTables, hashOf, registryStub, stub } from "../../../support/objects";

/**
 * The bad-input catalogue of the delegation, provider-registry and directory routes and of the
 * service-binding entrypoint (session-routes.test.ts beside this file covers the session routes).
 * Every input must be refused with its documented 4xx (RPC: a thrown error whose message starts
 * with the code), never a 5xx, and leave every table of every object involved unchanged: the
 * sessions it names, the one-shot child, an id that must stay unknown, and the provider registry.
 * The cases are in test/support/bad-inputs/delegation-cases.ts, the body generator in
 * test/support/bad-inputs/malformed-bodies.ts.
 *
 * A generated family adds seeded random malformed bodies for every body-carrying route. The run
 * ends with one line `bad inputs: catalogue=<n> generated=<n> accepted=<n> 5xx=<n> unchanged=<p>%`
 * and the same figures in test-results/bad-inputs.json.
 */

/** The status of every error code, as api.md documents it (not read from the runtime's own table). */
const DOCUMENTED_STATUS: Readonly<Record<string, number>> = {
  MALFORMED_JSON: 400,
  INVALID_REQUEST: 400,
  INVALID_MAX_DEPTH: 400,
  INVALID_SCHEMA: 400,
  UNAUTHENTICATED: 401,
  UNAUTHORIZED: 403,
  NOT_FOUND: 404,
  NO_PROVIDER: 404,
  DUPLICATE_PROVIDER: 409,
  DUPLICATE_CHILD: 409,
  DRAINING: 409,
  ACTIVATION_CLOSING: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_CAPABILITY: 422,
  DEPTH_EXCEEDED: 422,
  NOT_RESUMABLE: 422,
  RATE_LIMITED: 429,
};

function statusOf(code: unknown): number | undefined {
  return typeof code === "string" ? DOCUMENTED_STATUS[code] : undefined;
}

const GENERATED_COUNT = 200;
const GENERATED_SEED = 0x5eed_bad1;

// ---------------------------------------------------------------- state of every object involved

function objectStubs(w: World): DurableObjectStub[] {
  return [stub(w.a.id), stub(w.b.id), stub(w.child), stub(GHOST), registryStub()];
}

/** SHA-256 over every table of every object involved. */
async function stateHash(w: World): Promise<string> {
  return hashOf(await Promise.all(objectStubs(w).map(dumpTables)));
}

// ---------------------------------------------------------------- figures

interface Outcome {
  family: "catalogue" | "generated";
  surface: "http" | "rpc";
  route: string;
  category: string;
  accepted: boolean;
  serverError: boolean;
  unchanged: boolean;
}

const outcomes: Outcome[] = [];
let generatedKnownBugHits = 0;

function record(outcome: Outcome): void {
  outcomes.push(outcome);
}

// ---------------------------------------------------------------- figures file

/**
 * Writes a file on the host. Code inside workerd has no file system of its own, so this goes
 * through the Workers test pool's loopback service, the one its snapshot support writes through
 * (an internal of @cloudflare/vitest-plugin 1.5: if it disappears, the figures are only printed).
 */
async function writeHostFile(relativePath: string, text: string): Promise<string | undefined> {
  const loopback = (env as unknown as { __VITEST_POOL_WORKERS_LOOPBACK_SERVICE?: Fetcher })
    .__VITEST_POOL_WORKERS_LOOPBACK_SERVICE;
  const testPath = expect.getState().testPath;
  if (!loopback || !testPath) return undefined;
  const root = testPath.replace(/test\/workers\/.*$/, "");
  const target = `${root}${relativePath}`;
  const res = await loopback.fetch(`http://placeholder/snapshot?path=${encodeURIComponent(target)}`, {
    method: "PUT",
    body: text,
  });
  return res.status === 204 ? target : undefined;
}

function countBy(items: readonly Outcome[], key: (o: Outcome) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

// ---------------------------------------------------------------- the tests

function expectEnvelope(res: ApiResult): Record<string, unknown> {
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  const error = field<Record<string, unknown>>(res.body, "error");
  expect(error).toBeTypeOf("object");
  expect(typeof error.code).toBe("string");
  expect(typeof error.message).toBe("string");
  expect(String(error.message).length).toBeGreaterThan(0);
  return error;
}

/** Waits until nothing in the world changes any more (children settled, outboxes delivered). */
async function settle(w: World): Promise<void> {
  let last = "";
  let stable = 0;
  const deadline = Date.now() + 15_000;
  while (stable < 3) {
    if (Date.now() > deadline) throw new Error("the world never settled");
    const now = await stateHash(w);
    const status = field<string>((await api("GET", `/v1/sessions/${w.a.id}`)).body, "status");
    stable = now === last && status === "idle" ? stable + 1 : 0;
    last = now;
    await sleep(100);
  }
}

describe("bad inputs to the delegation, registry and directory routes and the RPC entrypoint (semantics.md §13)", () => {
  let world: World;

  beforeAll(async () => {
    const put = await api("PUT", P.provider(REMOTE), {
      body: { kind: "remote", url: "https://example.com" },
    });
    if (put.status !== 201) throw new Error(`could not register ${REMOTE}: ${put.status}`);
    const a = await createSession({ label: "delegation-target" });
    const b = await createSession({ label: "delegation-other" });
    await sendMessage(a.id, "history");
    await sendMessage(b.id, "history");
    await waitForTurnEnds(a.id, 1);
    await waitForTurnEnds(b.id, 1);
    const reserved = crypto.randomUUID();
    const started = await api("POST", P.subagents(a.id), {
      body: { ...ONE_SHOT, prompt: "ping", label: "probe-child", childId: reserved },
    });
    if (started.status !== 201) throw new Error(`could not start the child: ${JSON.stringify(started.body)}`);
    const runId = field<string>(started.body, "runId");
    const child = field<string>(started.body, "id");
    const run = await api("GET", P.run(a.id, runId, "?wait=10000"));
    if (field(run.body, "state") !== "settled") throw new Error("the child never settled");
    await waitForEvents(a.id, (es) => es.some((e) => e.type === "subagent/end"));
    world = { a, b, child, reserved, runId };
    await settle(world);
  }, 60_000);

  afterAll(async () => {
    const catalogue = outcomes.filter((o) => o.family === "catalogue");
    const generated = outcomes.filter((o) => o.family === "generated");
    const accepted = outcomes.filter((o) => o.accepted).length;
    const serverErrors = outcomes.filter((o) => o.serverError).length;
    const unchanged =
      outcomes.length === 0 ? 0 : outcomes.filter((o) => o.unchanged).length / outcomes.length;
    const percent = Math.floor(unchanged * 1000) / 10;
    const figures = {
      catalogue: catalogue.length,
      generated: generated.length,
      accepted,
      serverErrors,
      unchangedPercent: percent,
      seed: GENERATED_SEED,
      catalogueByRoute: countBy(catalogue, (o) => o.route),
      catalogueBySurface: countBy(catalogue, (o) => o.surface),
      generatedByRoute: countBy(generated, (o) => o.route),
      generatedByCategory: countBy(generated, (o) => o.category),
      generatedKnownBugHits,
      knownBugs: [...HTTP_CASES, ...RPC_CASES]
        .filter((c) => c.bug !== undefined)
        .map((c) => ({ case: `${"route" in c ? c.route : `rpc.${c.method}`}: ${c.name}`, bug: c.bug })),
      scope:
        "test/workers/http/bad-inputs/delegation-routes.test.ts; the session routes' catalogue is test/workers/http/bad-inputs/session-routes.test.ts",
    };
    console.log(
      `bad inputs: catalogue=${catalogue.length} generated=${generated.length} accepted=${accepted} 5xx=${serverErrors} unchanged=${percent}%`,
    );
    const written = await writeHostFile(
      "test-results/bad-inputs.json",
      `${JSON.stringify(figures, null, 2)}\n`,
    );
    if (!written) console.log("bad inputs: the figures file could not be written (no loopback service)");
  });

  it("covers at least 60 distinct bad inputs", () => {
    const http = HTTP_CASES.map((c) => `${c.route}: ${c.name}`);
    const rpcNames = RPC_CASES.map((c) => `rpc.${c.method}: ${c.name}`);
    expect(new Set(http).size).toBe(http.length);
    expect(new Set(rpcNames).size).toBe(rpcNames.length);
    expect(http.length + rpcNames.length).toBeGreaterThanOrEqual(60);
  });

  for (const input of HTTP_CASES) {
    const test = input.bug === undefined ? it : it.fails;
    const codes: string[] = [input.code].flat();
    const status = statusOf(codes[0]);
    test(`${input.route}: answers ${status} ${codes.join("|")} to ${input.name}, changing nothing`, async () => {
      const w = input.isolated ? { ...world, a: await createSession({ label: "isolated-probe" }) } : world;
      const before = await stateHash(w);
      const res = await input.run(w);
      const after = await stateHash(w);
      record({
        family: "catalogue",
        surface: "http",
        route: input.route,
        category: input.name,
        accepted: res.status < 400,
        serverError: res.status >= 500,
        unchanged: after === before,
      });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      const error = expectEnvelope(res);
      expect(codes).toContain(error.code);
      expect(statusOf(error.code)).toBe(res.status);
      expect(after).toBe(before);
    });
  }

  for (const input of RPC_CASES) {
    const test = input.bug === undefined ? it : it.fails;
    test(`rpc.${input.method}: throws ${input.code} for ${input.name}, changing nothing`, async () => {
      const before = await stateHash(world);
      const outcome = await rpcOutcome(() => input.run(rpc, world));
      const after = await stateHash(world);
      const code = /^([A-Z_]+):/.exec(outcome.message)?.[1];
      const status = statusOf(code);
      record({
        family: "catalogue",
        surface: "rpc",
        route: `rpc.${input.method}`,
        category: input.name,
        accepted: !outcome.threw,
        serverError: outcome.threw && (status === undefined || status >= 500),
        unchanged: after === before,
      });
      expect(outcome.threw, "the call was accepted").toBe(true);
      expect(outcome.message.startsWith(`${input.code}: `), outcome.message).toBe(true);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
      expect(after).toBe(before);
    });
  }

  it(`refuses ${GENERATED_COUNT} generated malformed bodies (seed ${GENERATED_SEED}) with a 4xx, changing nothing`, async () => {
    const generator = new BodyGenerator(prng(GENERATED_SEED));
    const problems: string[] = [];
    const known: string[] = [];
    for (let i = 0; i < GENERATED_COUNT; i++) {
      const g = generator.build(i, world);
      const before = await stateHash(world);
      const res = await fetchWorker(
        request(g.route.method, g.route.path(world), {
          token: ADMIN,
          raw: g.bytes,
          headers: { "content-type": "application/json" },
        }),
      );
      const after = await stateHash(world);
      const code = field<string>(res.body, "error", "code");
      const documented = statusOf(code);
      record({
        family: "generated",
        surface: "http",
        route: g.route.route,
        category: g.category,
        accepted: res.status < 400,
        serverError: res.status >= 500,
        unchanged: after === before,
      });
      const wrong =
        res.status < 400 || res.status >= 500
          ? `answered ${res.status}`
          : documented !== res.status
            ? `code ${String(code)} does not match status ${res.status}`
            : typeof field(res.body, "error", "message") !== "string"
              ? "no error message"
              : after !== before
                ? "state changed"
                : undefined;
      if (wrong) {
        const preview = new TextDecoder().decode(g.bytes.slice(0, 160));
        const line = `#${i} ${g.route.route} [${g.category}${g.target ? ` into ${g.target}` : ""}] ${wrong}: ${preview}`;
        problems.push(line);
      }
    }
    generatedKnownBugHits = known.length;
    if (known.length > 0) console.log(`generated bodies explained by a known bug:\n${known.join("\n")}`);
    expect(problems).toEqual([]);
  }, 300_000);
});
