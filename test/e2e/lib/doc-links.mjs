// What a text points a reader at: the `docs/<page>.md` it names, and the relative targets of its
// Markdown links. Used by test/e2e/doc-links.test.mjs (the repository) and
// test/e2e/package.test.mjs (the packed tarball).

/** Each `docs/<page>.md` a text names (wherever it stands: a comment, a sentence, a link). */
export function docsNamed(text) {
  return [...text.matchAll(/(?<![\w./-])(docs\/[\w.-]+\.md)\b/g)].map((m) => m[1]);
}

/** Each relative target of a Markdown link or image, without its `#anchor`. */
export function relativeLinks(markdown) {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1])
    .filter((target) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(target))
    .map((target) => target.split("#")[0])
    .filter((target) => target !== "");
}
