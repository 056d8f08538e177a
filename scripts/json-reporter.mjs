// A node:test reporter (Node 22 reporter API: an async generator over the run's events) that
// writes one JSON object shaped like vitest's JSON report (`numPassedTests`, `numFailedTests`) so
// scripts/test.mjs can add every suite into one closing line. Use it next to a human reporter:
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./scripts/json-reporter.mjs --test-reporter-destination=report.json ...
//
// What counts:
// * a passing test that has no subtests (suites and parent tests are not tests of their own);
//   skipped and todo tests are reported separately, never as passed;
// * a failing test without subtests, including cancelled and timed-out ones;
// * a failing suite, parent test or file whose failure no failing descendant explains: a failed
//   `before`/`after` hook, an uncaught error after the tests, a file that crashed or did not load.
//   A failing todo test does not count (node:test does not fail the run for it either).

export default async function* jsonReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let todo = 0;
  const failures = [];
  let nodeSummary = null;
  // Per file, per nesting level: what the subtree below a test reported since that level's
  // previous result. Results arrive children first (tests in one file run one at a time).
  const levels = new Map();

  for await (const event of source) {
    if (event.type === "test:summary" && event.data.file === undefined) {
      nodeSummary = { success: event.data.success, counts: event.data.counts };
      continue;
    }
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const data = event.data;
    const key = data.file ?? "";
    let below = levels.get(key);
    if (!below) {
      below = [];
      levels.set(key, below);
    }
    const nesting = data.nesting ?? 0;
    const subtree = below[nesting + 1] ?? { results: 0, failures: 0 };
    below.length = nesting + 1; // deeper levels belong to this test and are done
    const hasChildren = subtree.results > 0 || data.details?.type === "suite";

    let countedFailure = 0;
    if (event.type === "test:pass") {
      if (data.skip) skipped++;
      else if (data.todo) todo++;
      else if (!hasChildren) passed++;
    } else if (data.todo) {
      todo++;
    } else if (!hasChildren || subtree.failures === 0) {
      countedFailure = 1;
      failed++;
      const error = data.details?.error;
      failures.push({
        file: data.file,
        name: data.name,
        failureType: error?.failureType,
        message: String(error?.cause?.message ?? error?.message ?? "").slice(0, 2000),
      });
    }

    const mine = below[nesting] ?? { results: 0, failures: 0 };
    mine.results += 1 + subtree.results;
    mine.failures += countedFailure + subtree.failures;
    below[nesting] = mine;
  }

  yield `${JSON.stringify({
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: skipped,
    numTodoTests: todo,
    failures,
    nodeSummary,
  })}\n`;
}
