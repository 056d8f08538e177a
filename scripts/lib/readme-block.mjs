// Writes a generated block of a Markdown file: the text between `<!-- <name>:start -->` and
// `<!-- <name>:end -->` is replaced (the markers stay), so a figure in the README is always the
// output of the command that measured it. Used by npm run bundle-size, test:faults and bench.
import { readFileSync, writeFileSync } from "node:fs";

export function writeBlock(path, name, text) {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const file = readFileSync(path, "utf8");
  const from = file.indexOf(start);
  const to = file.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${path} has no ${start} ... ${end} block`);
  writeFileSync(path, `${file.slice(0, from + start.length)}\n${text.trim()}\n${file.slice(to)}`);
}
