/**
 * Where the next page of a tree's trace starts (`GET …/trace?cursor=`, README "Traces"). A tree's
 * spans are read in one order: a session's own log, then each local child's tree in the order
 * the children were created. A cursor names a place in that walk: in a session's own log (`s`:
 * fold again from `from`, a point where no span was open, and send only the spans completed
 * after the event `after`), or at a child (`c`: its index, then where in its tree).
 *
 * Written `c<index>/…/s<from>.<after>` (`c2/s10.41`: the third child's own log, from event 10,
 * past event 41); a bare `c<index>` is that child's tree from its start.
 */

import type { TraceCursor } from "../contract/trace";

export type { TraceCursor } from "../contract/trace";

/** The longest cursor accepted (a walk as deep as a tree's local levels can go, and then some). */
export const MAX_TRACE_CURSOR_CHARS = 400;

export function formatTraceCursor(cursor: TraceCursor): string {
  if (cursor.kind === "own") return `s${cursor.from}.${cursor.after}`;
  return cursor.inner === undefined
    ? `c${cursor.index}`
    : `c${cursor.index}/${formatTraceCursor(cursor.inner)}`;
}

const CHILD = /^c(0|[1-9]\d{0,5})$/;
const OWN = /^s(0|[1-9]\d{0,14})\.(-1|0|[1-9]\d{0,14})$/;

/** A cursor a page gave, or undefined for anything else. */
export function parseTraceCursor(text: string): TraceCursor | undefined {
  if (text.length > MAX_TRACE_CURSOR_CHARS) return undefined;
  const segments = text.split("/");
  const last = segments.pop()!;
  let cursor: TraceCursor | undefined;
  const own = OWN.exec(last);
  if (own) {
    const from = Number(own[1]);
    const after = Number(own[2]);
    if (after < from - 1) return undefined;
    cursor = { kind: "own", from, after };
  } else {
    const child = CHILD.exec(last);
    if (!child) return undefined;
    cursor = { kind: "child", index: Number(child[1]), inner: undefined };
  }
  for (const segment of segments.reverse()) {
    const child = CHILD.exec(segment);
    if (!child) return undefined;
    cursor = { kind: "child", index: Number(child[1]), inner: cursor };
  }
  return cursor;
}
