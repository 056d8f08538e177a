// A node:test reporter that writes `{numPassedTests, numFailedTests}` (the shape vitest's JSON
// reporter uses) so scripts/test.mjs can add every suite into one closing line.
export default async function* jsonReporter(source) {
  let passed = 0;
  let failed = 0;
  for await (const event of source) {
    if (event.data?.details?.type === "suite") continue;
    if (event.type === "test:pass" && !event.data.skip && !event.data.todo) passed++;
    if (event.type === "test:fail") failed++;
  }
  yield JSON.stringify({ numPassedTests: passed, numFailedTests: failed });
}
