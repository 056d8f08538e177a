import { DurableObject } from "cloudflare:workers";

/**
 * The raw Durable Object floor for benchmarks: the least work the runtime's operations could
 * possibly cost on this platform. Placeholder until the benchmark harness lands.
 */
export class FloorObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
  }

  /** One durable write, answered once it is committed (the output gate). */
  write(value: string): number {
    this.ctx.storage.sql.exec("INSERT INTO rows (value) VALUES (?)", value);
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM rows").one().n;
  }
}
