import type { EventLog } from "../store/event-log";

/**
 * The log's events as a live stream sends them (subscribers.ts): pages of their wire JSON, read
 * from the log's stored rows, so a replay holds one page at a time, never the log.
 */

/** Events per page read from the log (and the byte budget below, whichever is reached first). */
const REPLAY_PAGE = 500;
/** Bytes of event data per page read from the log; a page always holds at least one event. */
const PAGE_BYTES = 64 * 1024;

/** A log event read for a replay: its seq and type, and its JSON as sent. */
export interface WireEvent {
  seq: number;
  type: string;
  json: string;
}

/**
 * The events after `after` up to `upTo` as their wire JSON: at most REPLAY_PAGE of them and,
 * past the first, no more than PAGE_BYTES of data (the log's `storedPage`: sizes first, so a
 * page of large events is never read whole only to be cut); the rows' stored JSON goes out as it
 * is (it is `JSON.stringify` of the data, so this is the text `JSON.stringify(event)` gives),
 * never parsed only to be serialized again.
 */
export function wirePage(log: EventLog, after: number, upTo: number): WireEvent[] {
  return log.storedPage(after, REPLAY_PAGE, { maxBytes: PAGE_BYTES, upTo }).map((r) => ({
    seq: r.seq,
    type: r.type,
    json: `{"seq":${r.seq},"type":${JSON.stringify(r.type)},"at":${r.at},"data":${r.json}}`,
  }));
}
