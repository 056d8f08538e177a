/**
 * Caller input as an error message shows it: JSON-quoted (control characters escaped, so a value
 * cannot break a log line or fake another message) and cut to its first `max` UTF-16 units, the
 * cut marked `…` and followed by the value's length. A message never echoes a 10,000-character id.
 * A cut never splits a surrogate pair.
 */
export function quote(value: unknown, max = 64): string {
  const text = String(value);
  if (text.length <= max) return JSON.stringify(text);
  let cut = text.slice(0, max);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${JSON.stringify(`${cut}…`)} (${text.length} characters)`;
}

/** A list of caller input as an error message shows it: the first `shown` quoted, then how many more. */
export function quoteAll(values: readonly unknown[], shown = 5): string {
  const listed = values.slice(0, shown).map((v) => quote(v));
  const more = values.length - listed.length;
  return more > 0 ? `${listed.join(", ")} and ${more} more` : listed.join(", ");
}
