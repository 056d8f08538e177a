// The benchmark's targets are defined once, in bench/targets.json, and every place that states
// one is written from it: bench/README.md's targets block, the closing line of its results block
// and the README's benchmark block. Each verdict there must follow from its own ratio and its
// target, and no ratio figure may stand outside the generated blocks.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadTargets, targetsBlock } from "../../bench/lib/render.mjs";
import { REPO_ROOT } from "./lib/dev-server.mjs";

const targets = loadTargets();
const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const benchReadme = readFileSync(join(REPO_ROOT, "bench/README.md"), "utf8");

/** The text between `<!-- name:start -->` and `<!-- name:end -->`. */
function block(text, name) {
  const from = text.indexOf(`<!-- ${name}:start -->`);
  const to = text.indexOf(`<!-- ${name}:end -->`);
  assert.ok(from >= 0 && to > from, `no ${name} block`);
  return text.slice(from + `<!-- ${name}:start -->`.length, to);
}

/** A table's cells, row by row, whatever its alignment (the formatter pads the columns). */
function cells(table) {
  return table
    .split("\n")
    .filter((line) => line.startsWith("|") && !/^\|[\s|:-]+\|$/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split("|")
        .map((c) => c.trim()),
    );
}

/** The first table of a text: its first run of `|` lines. */
function firstTable(text) {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.startsWith("|"));
  const end = lines.findIndex((line, i) => i > start && !line.startsWith("|"));
  return lines.slice(start, end < 0 ? undefined : end).join("\n");
}

/** The text with its generated blocks and code blocks left out. */
function prose(text) {
  return text.replace(/<!-- (\S+):start -->[\s\S]*?<!-- \1:end -->/g, "").replace(/```[\s\S]*?```/g, "");
}

const met = (ratio, atMost) => ratio <= atMost;

describe("the benchmark's targets, defined once", () => {
  it("bench/README.md's targets block is bench/targets.json's", () => {
    const written = cells(block(benchReadme, "targets"));
    assert.deepEqual(written, cells(targetsBlock(targets)));
  });

  it("the README's benchmark block gives each row its target from bench/targets.json, and the verdict its ratio earns", () => {
    // the block's first table holds the judged rows (the startup and bundle table follows it)
    const rows = cells(firstTable(block(readme, "benchmark"))).slice(1);
    const judged = rows.filter((r) => r[4] !== "-");
    const VERDICT = /^([\d.]+)x: (met|missed|not measured)$/;
    assert.deepEqual(
      judged.map((r) => Number(VERDICT.exec(r[4])?.[1])),
      Object.values(targets).map((t) => t.atMost),
      "the rows' targets, in bench/targets.json's order",
    );
    for (const [what, , , ratio, verdict] of judged) {
      const [, atMost, word] = VERDICT.exec(verdict);
      // a row the run has no figure for (its phase failed) says so, and claims no ratio
      if (word === "not measured") {
        assert.equal(ratio, "-", `${what}: not measured, so no ratio`);
        continue;
      }
      const expected = met(Number.parseFloat(ratio), Number(atMost)) ? "met" : "missed";
      assert.equal(word, expected, `${what}: ${ratio} against ${atMost}x`);
    }
  });

  it("bench/README.md's results end with every target of bench/targets.json, each judged by its ratio", () => {
    const results = block(benchReadme, "results");
    for (const [name, t] of Object.entries(targets)) {
      const escaped = t.what.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const line = new RegExp(
        `${escaped}: (?:([\\d.]+)x|not measured|no ratio \\(its floor measured 0 ms\\)), at most ([\\d.]+)x: (met|MISSED)`,
      ).exec(results);
      assert.ok(line, `the results block judges ${name}`);
      assert.equal(Number(line[2]), t.atMost, `${name}'s target`);
      // a target the run has no figure for, or no ratio (its floor measured 0 ms), is not met
      const verdict = line[1] !== undefined && met(Number(line[1]), t.atMost) ? "met" : "MISSED";
      assert.equal(line[3], verdict, `${name}'s verdict`);
    }
  });

  it("states no ratio outside the generated blocks", () => {
    const ratio = /\b\d+(\.\d+)?x\b/g;
    assert.deepEqual(prose(benchReadme).match(ratio) ?? [], [], "bench/README.md");
    const benchmarks = readme.slice(readme.indexOf("## Benchmarks"), readme.indexOf("## How it works"));
    assert.deepEqual(prose(benchmarks).match(ratio) ?? [], [], "the README's Benchmarks section");
  });
});
