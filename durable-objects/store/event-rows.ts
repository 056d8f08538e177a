import type { EventType, SessionEvent } from "../../src/contract/events";

/**
 * An event row as the log stores it, and the helpers every read of the log shares: parsing a
 * row, leaving fields out of a parsed event, and fitting a page of rows into a byte budget.
 */

export interface StoredEvent {
  seq: number;
  type: EventType;
  at: number;
  /** The row's `data`, exactly as stored. */
  json: string;
}

/** A stored row as an event (its data parsed). */
export function parsed<T extends EventType = EventType>(e: StoredEvent): SessionEvent<T> {
  return { seq: e.seq, type: e.type as T, at: e.at, data: JSON.parse(e.json) };
}

/** `event`, freshly parsed, with the top-level `fields` of its data left out. */
export function without<T extends EventType>(
  event: SessionEvent<T>,
  fields: readonly string[],
): SessionEvent<T> {
  for (const field of fields) delete (event.data as Record<string, unknown>)[field];
  return event;
}

/** How many of the leading sizes fit in `budget` (at least one, when there is one). */
export function fitting(sizes: readonly number[], budget: number): number {
  let total = 0;
  for (let i = 0; i < sizes.length; i++) {
    total += sizes[i]!;
    if (i > 0 && total > budget) return i;
  }
  return sizes.length;
}
