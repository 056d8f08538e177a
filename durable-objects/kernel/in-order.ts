/**
 * `parts` in the declared `order` of their names. Throws when a part's name is missing from the
 * order or an order's name from the parts: the order is declared once, as data, and every part
 * it concerns has its place in it.
 */
export function inOrder<P extends { readonly name: string }>(
  parts: readonly P[],
  order: readonly string[],
): P[] {
  const byName = new Map(parts.map((part) => [part.name, part]));
  if (byName.size !== parts.length) throw new Error("two parts carry the same name");
  const missing = parts.filter((part) => !order.includes(part.name)).map((part) => part.name);
  if (missing.length > 0) throw new Error(`no place in the declared order for ${missing.join(", ")}`);
  return order.map((name) => {
    const part = byName.get(name);
    if (!part) throw new Error(`the declared order names ${name}, which no part carries`);
    return part;
  });
}
