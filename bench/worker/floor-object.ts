import { DurableObject } from "cloudflare:workers";
import { patchSql } from "./sql-count";

/** Most children one fan-out may spawn: enough for the delegation benchmarks, bounded for safety. */
export const MAX_FANOUT = 1_000;

/** The benchmark Worker's bindings: the product's, plus the floor object. */
export interface BenchEnv extends Env {
  FLOOR: DurableObjectNamespace<FloorObject>;
}

/**
 * The raw Durable Object floor for benchmarks: the least work the runtime's operations could
 * possibly cost on this platform. Only in the benchmark Worker (bench/worker/entry.ts).
 *
 * * `write()`: one durable write (floor A: what accepting a message costs at the very least).
 * * `spawn()`: a parent calls a brand-new child object over RPC; the child writes one row and
 *   returns a string; the parent writes one row (the least a delegation to a new child costs).
 * * `fanout(n)`: the same for n brand-new children at once from one parent.
 */
export class FloorObject extends DurableObject<BenchEnv> {
  constructor(ctx: DurableObjectState, env: BenchEnv) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
  }

  /** One durable write, answered once it is committed (the output gate). */
  write(value: string): number {
    this.ctx.storage.sql.exec("INSERT INTO rows (value) VALUES (?)", value);
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM rows").one().n;
  }

  /** The child half of a spawn: one durable write, then a string answer. */
  child(task: string): string {
    this.ctx.storage.sql.exec("INSERT INTO rows (value) VALUES (?)", task);
    return `done: ${task}`;
  }

  /** Parent half: a new child (random name) does its write and answers; the parent records it. */
  async spawn(task: string): Promise<string> {
    const answer = await this.#newChild().child(task);
    this.ctx.storage.sql.exec("INSERT INTO rows (value) VALUES (?)", answer);
    return answer;
  }

  /** `n` spawns at once from this parent; each answer is recorded as it arrives. */
  async fanout(n: number, task: string): Promise<number> {
    const count = Math.max(1, Math.min(MAX_FANOUT, Math.floor(n)));
    const answers = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const answer = await this.#newChild().child(`${task} #${i}`);
        this.ctx.storage.sql.exec("INSERT INTO rows (value) VALUES (?)", answer);
        return answer;
      }),
    );
    return answers.length;
  }

  /** Lets the profiler count SQL statements (sql-count.ts): patches the isolate's `SqlStorage`. */
  patchSql(): void {
    patchSql(this.ctx.storage.sql);
  }

  #newChild(): DurableObjectStub<FloorObject> {
    return this.env.FLOOR.get(this.env.FLOOR.idFromName(`child-${crypto.randomUUID()}`));
  }
}
