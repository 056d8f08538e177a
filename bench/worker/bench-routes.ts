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
 * * `POST /bench/sql?count=on|off`, `GET /bench/sql`: the SQL statements run meanwhile (profiler).
 *
 * They answer JSON; every other path under /bench/ is a 404 in the API's error envelope.
 */
export type { BenchEnv };

export async function benchRoute(request: Request, env: BenchEnv): Promise<Response> {
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
    case "/bench/floor/fanout": {
      const n = Number(url.searchParams.get("n") ?? "100");
      if (!Number.isInteger(n) || n < 1 || n > MAX_FANOUT) {
        return Response.json(
          { error: { code: "INVALID_REQUEST", message: `n must be an integer in 1..${MAX_FANOUT}` } },
          { status: 400 },
        );
      }
      return Response.json({ children: await parent.fanout(n, "x") });
    }
    default:
      return notFound();
  }
}

function notFound(): Response {
  return Response.json({ error: { code: "NOT_FOUND", message: "no such bench route" } }, { status: 404 });
}
