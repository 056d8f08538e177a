import type { FloorObject } from "../durable-objects/floor-object";

/**
 * Benchmark floor routes, served only when BENCH_ROUTES = "1":
 * `POST /bench/floor/write?key=<name>`: one Worker -> DO RPC that does one durable write.
 */
export async function benchRoute(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const key = url.searchParams.get("key") ?? "floor";
  const floor = env.FLOOR as unknown as DurableObjectNamespace<FloorObject>;
  if (url.pathname === "/bench/floor/write") {
    const n = await floor.get(floor.idFromName(key)).write("x");
    return Response.json({ n });
  }
  return Response.json({ error: { code: "NOT_FOUND", message: "no such bench route" } }, { status: 404 });
}
