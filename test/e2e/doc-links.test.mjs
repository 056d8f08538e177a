// Every page the code and the docs send a reader to exists. The package publishes its
// declarations (built from src/ and durable-objects/, comments included), README.md and
// docs/*.md: a `docs/<page>.md` named in any of them, and every relative link of the Markdown
// pages, must be a file of this repository. (test/e2e/package.test.mjs checks the same of the
// packed tarball's own files.)
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "./lib/dev-server.mjs";
import { docsNamed, relativeLinks } from "./lib/doc-links.mjs";

/** Files under `dir` (relative to the repository) whose names end with `suffix`. */
function filesUnder(dir, suffix) {
  return readdirSync(join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(suffix))
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)));
}

const markdownPages = ["README.md", ...filesUnder("docs", ".md")];
const sources = [...filesUnder("src", ".ts"), ...filesUnder("durable-objects", ".ts")];

describe("the pages the code and the docs point at", () => {
  it("finds what it looks for (the scanner itself)", () => {
    assert.deepEqual(docsNamed("see docs/api.md and (docs/semantics.md §3), not my-docs/x.md"), [
      "docs/api.md",
      "docs/semantics.md",
    ]);
    assert.deepEqual(relativeLinks("[a](docs/a.md#x) [b](https://e.com) [c](#here) ![d](img.png)"), [
      "docs/a.md",
      "img.png",
    ]);
    assert.ok(sources.includes("src/worker/index.ts"), "the sources were found");
  });

  it("every docs/*.md named in the published sources exists", () => {
    const missing = sources.flatMap((file) =>
      docsNamed(readFileSync(join(REPO_ROOT, file), "utf8"))
        .filter((page) => !existsSync(join(REPO_ROOT, page)))
        .map((page) => `${file} names ${page}`),
    );
    assert.deepEqual(missing, []);
  });

  it("every docs/*.md named in README.md and docs/ exists, and every relative link resolves", () => {
    const missing = markdownPages.flatMap((file) => {
      const text = readFileSync(join(REPO_ROOT, file), "utf8");
      const named = docsNamed(text)
        .filter((page) => !existsSync(join(REPO_ROOT, page)))
        .map((page) => `${file} names ${page}`);
      const linked = relativeLinks(text)
        .filter((target) => !existsSync(join(REPO_ROOT, dirname(file), target)))
        .map((target) => `${file} links to ${target}`);
      return [...named, ...linked];
    });
    assert.deepEqual(missing, []);
  });
});
