/**
 * SQL statements run in this isolate while counting is on, for the profiler's statements per
 * delegation (bench/profile.mjs). Under workerd every object of the Worker runs in the one
 * isolate, so patching the `SqlStorage` prototype once (from any object's storage) sees them all.
 */
const statements = new Map<string, number>();
let counting = false;
let patched = false;

export function patchSql(sql: SqlStorage): void {
  if (patched) return;
  patched = true;
  const prototype = Object.getPrototypeOf(sql) as { exec: (...args: unknown[]) => unknown };
  const exec = prototype.exec;
  prototype.exec = function (this: unknown, query: unknown, ...bindings: unknown[]) {
    if (counting) {
      const key = String(query).replace(/\s+/g, " ").trim().slice(0, 160);
      statements.set(key, (statements.get(key) ?? 0) + 1);
    }
    return exec.call(this, query, ...bindings);
  };
}

export function countSql(on: boolean): void {
  counting = on;
}

/** The tally so far (then reset). */
export function takeSqlCounts(): { patched: boolean; statements: Record<string, number> } {
  const tally = Object.fromEntries(statements);
  statements.clear();
  return { patched, statements: tally };
}
