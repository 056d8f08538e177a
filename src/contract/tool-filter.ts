/** Which tools a session's model sees: `allow` (only these) and then `deny` (never these), by name. */
export interface ToolFilter {
  allow?: string[] | undefined;
  deny?: string[] | undefined;
}

/**
 * The filter that allows a tool iff both `outer` and `inner` allow it (an absent filter allows
 * every tool): `allow` is the names both allow lists hold (or the one list that is set), `deny`
 * every name either denies. A child's effective filter is its parent's effective filter
 * intersected with its own request's, so a filter holds for the whole tree below the session it
 * was set on, at any depth. Names keep `outer`'s order, then `inner`'s new ones; undefined when
 * neither is set.
 */
export function intersectToolFilters(
  outer: ToolFilter | undefined,
  inner: ToolFilter | undefined,
): ToolFilter | undefined {
  if (!outer) return inner;
  if (!inner) return outer;
  const allow =
    outer.allow && inner.allow
      ? outer.allow.filter((name) => inner.allow!.includes(name))
      : (outer.allow ?? inner.allow);
  const deny =
    outer.deny && inner.deny ? [...new Set([...outer.deny, ...inner.deny])] : (outer.deny ?? inner.deny);
  return {
    ...(allow === undefined ? {} : { allow }),
    ...(deny === undefined ? {} : { deny }),
  };
}
