/**
 * Any JSON value. Spelled `{} | null` (everything but undefined) rather than a recursive JSON
 * type, which the platform's RPC stub types cannot expand, or `unknown`, which they treat as not
 * serializable (a stub's method would then seem never to succeed).
 */
// biome-ignore lint/complexity/noBannedTypes: `{}` is exactly "any value but null and undefined"
export type JsonValue = {} | null;
