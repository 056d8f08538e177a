/**
 * Whether an error thrown by a Durable Object call is the platform's `overloaded` (the object has
 * too much work queued). Such a call must not be retried at once; callers back off longer.
 */
export function isOverloaded(error: unknown): boolean {
  return typeof error === "object" && error !== null && "overloaded" in error && error.overloaded === true;
}
