/**
 * The startup floor (bench/README.md, "Startup"): the least a Worker with a SQLite Durable Object
 * is. Every request writes one row in the object named by the path and answers its count.
 */
import { DurableObject } from "cloudflare:workers";

interface FloorEnv {
  FLOOR: DurableObjectNamespace<Floor>;
}

export class Floor extends DurableObject<FloorEnv> {
  /** One durable insert; resolves with the rows the object holds. */
  write(value: string): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    sql.exec("INSERT INTO rows (value) VALUES (?)", value);
    return sql.exec<{ n: number }>("SELECT count(*) AS n FROM rows").one().n;
  }
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const name = new URL(request.url).pathname.slice(1) || "floor";
    const rows = await env.FLOOR.get(env.FLOOR.idFromName(name)).write(request.method);
    return Response.json({ rows });
  },
} satisfies ExportedHandler<FloorEnv>;
