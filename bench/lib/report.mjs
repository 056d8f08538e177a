// Turns the figures into tables (stdout, and bench/README.md's results block through render.mjs).
import { ms, ratio } from "./stats.mjs";

/**
 * rows: { name, n, p50, p99, floor?: { p50, p99 }, target? }; the ratio columns divide by the
 * row's floor (`floorName` names it in the header).
 */
export function table(rows, { floorName = "floor A" } = {}) {
  const head = ["measurement", "n", "p50 ms", "p99 ms", `p50 / ${floorName}`, `p99 / ${floorName}`, "target"];
  const body = rows.map((r) => [
    r.name,
    String(r.n ?? ""),
    ms(r.p50),
    ms(r.p99),
    r.floor ? ratio(r.p50, r.floor.p50) : "",
    r.floor ? ratio(r.p99, r.floor.p99) : "",
    r.target ?? "",
  ]);
  return [head, head.map(() => "---"), ...body].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** Any markdown table (head, rule, body rows) aligned for a terminal. */
export function alignTable(markdownTable) {
  const markdown = markdownTable
    .split("\n")
    .filter((_, i) => i !== 1)
    .map((line) =>
      line
        .slice(2, -2)
        .split(" | ")
        .map((c) => c.trim()),
    );
  const widths = markdown[0].map((_, k) => Math.max(...markdown.map((cells) => cells[k].length)));
  return markdown
    .map((cells) => cells.map((c, k) => (k === 0 ? c.padEnd(widths[k]) : c.padStart(widths[k]))).join("  "))
    .join("\n");
}

/** The latency table aligned for a terminal. */
export function terminalTable(rows, options) {
  return alignTable(table(rows, options));
}

/** A plain markdown table from a header and rows of cells. */
export function grid(head, body) {
  return [head, head.map(() => "---"), ...body].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}
