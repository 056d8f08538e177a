import type { SubagentsEntrypoint } from "../../src/rpc/entrypoint";
import { type BenchEnv, MAX_FANOUT } from "./floor-object";
import { countSql, takeSqlCounts } from "./sql-count";

/**
 * Benchmark floor routes of the benchmark Worker (bench/worker/entry.ts), never of the product:
 *
 * * `POST /bench/floor/write?key=<name>`: one Worker -> DO RPC that does one durable write.
 * * `POST /bench/floor/spawn?key=<name>`: the parent object `key` calls a brand-new child object
 *   over RPC; the child writes one row and answers a string; the parent writes one row.
 * * `POST /bench/floor/fanout?key=<name>&n=<1..1000>`: the same for n new children at once.
 *
 * * `POST /bench/send?session=<id>&from=<i>&count=<n>&inFlight=<k>&prefix=<text>`: sends the
 *   session the plain text messages `<prefix><i>` .. `<prefix><i + n - 1>` through the product's
 *   own RPC entrypoint (`SubagentsEntrypoint.send`, the deployment's authority, each with the
 *   idempotency key `<prefix>-<i>`, so a batch sent again is never doubled), `k` at a time;
 *   answers once every one was accepted. How the benchmark builds a long session without an HTTP
 *   request per message.
 *
 * * `POST /bench/sql?count=on|off`, `GET /bench/sql`: the SQL statements run meanwhile, with the
 *   rows they read and wrote (the profiler, the long session's row).
 *
 * They answer JSON; every other path under /bench/ is a 404 in the API's error envelope.
 */
export type { BenchEnv };

/** Most messages one `/bench/send` carries: under MAX_PENDING_MESSAGES (1,000) by itself. */
export const MAX_SEND_BATCH = 900;

export async function benchRoute(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/bench/sql") {
    if (request.method === "GET") return Response.json(takeSqlCounts());
    const on = url.searchParams.get("count") === "on";
    if (on) await env.FLOOR.get(env.FLOOR.idFromName("sql-count")).patchSql();
    countSql(on);
    return Response.json({ counting: on });
  }
  if (request.method !== "POST") return notFound();
  const key = url.searchParams.get("key") ?? "floor";
  const parent = env.FLOOR.get(env.FLOOR.idFromName(key));
  switch (url.pathname) {
    case "/bench/floor/write":
      return Response.json({ n: await parent.write("x") });
    case "/bench/floor/spawn":
      return Response.json({ answer: await parent.spawn("x") });
    case "/bench/send":
      return sendBatch(url.searchParams, ctx);
    case "/bench/floor/fanout": {
      const n = Number(url.searchParams.get("n") ?? "100");
      if (!Number.isInteger(n) || n < 1 || n > MAX_FANOUT) {
        return invalid(`n must be an integer in 1..${MAX_FANOUT}`);
      }
      return Response.json({ children: await parent.fanout(n, "x") });
    }
    default:
      return notFound();
  }
}

async function sendBatch(params: URLSearchParams, ctx: ExecutionContext): Promise<Response> {
  const int = (name: string, max: number): number | undefined => {
    const value = Number(params.get(name));
    return Number.isInteger(value) && value >= 0 && value <= max ? value : undefined;
  };
  const session = params.get("session") ?? "";
  const from = int("from", 10_000_000);
  const count = int("count", MAX_SEND_BATCH);
  const inFlight = int("inFlight", 64) ?? 0;
  const prefix = params.get("prefix") ?? "";
  if (from === undefined || count === undefined || inFlight < 1 || !/^[a-z0-9-]{1,20}$/.test(prefix))
    return invalid(
      `from (0..10000000), count (0..${MAX_SEND_BATCH}), inFlight (1..64) and prefix ([a-z0-9-]{1,20}) are needed`,
    );
  // the Worker's own exports as loopback service bindings: the entrypoint as another Worker calls it
  const entry = (
    ctx.exports as unknown as {
      SubagentsEntrypoint: Service<SubagentsEntrypoint & Rpc.WorkerEntrypointBranded>;
    }
  ).SubagentsEntrypoint;
  let next = from;
  const end = from + count;
  const sender = async (): Promise<void> => {
    while (next < end) {
      const i = next++;
      await entry.send(session, { content: `${prefix}${i}`, idempotencyKey: `${prefix}-${i}` });
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, Math.max(1, count)) }, sender));
  return Response.json({ sent: count });
}

function invalid(message: string): Response {
  return Response.json({ error: { code: "INVALID_REQUEST", message } }, { status: 400 });
}

function notFound(): Response {
  return Response.json({ error: { code: "NOT_FOUND", message: "no such bench route" } }, { status: 404 });
}
