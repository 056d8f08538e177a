import type { ContentBlock, DescendantEntry, SessionView } from "../../src/client";

/** Small formatting helpers shared by the views. */

export function shortId(id: string): string {
  return id.slice(0, 8);
}

export function clock(at: number): string {
  return new Date(at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function when(at: number): string {
  const d = new Date(at);
  return `${d.toLocaleDateString([], { month: "short", day: "numeric" })} ${clock(at)}`;
}

export function text(blocks: readonly ContentBlock[] | undefined): string {
  return (blocks ?? []).map((b) => (typeof b.text === "string" ? b.text : "")).join("");
}

export function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** What the dashboard shows as a session's state: running / waiting / idle / settled. */
export type DisplayStatus = "running" | "waiting" | "idle" | "settled" | "unavailable";

/**
 * A child's state from its listing row: its own turn running, waiting on its children, or (with no
 * open epoch, i.e. activity "inactive") settled; a top-level session is never settled.
 */
export function childStatus(entry: DescendantEntry): DisplayStatus {
  if (entry.kind === "diagnostic") return "unavailable";
  if (entry.status === "running" || entry.status === "waiting") return entry.status;
  return entry.activity === "inactive" ? "settled" : "idle";
}

export function sessionStatus(view: SessionView): DisplayStatus {
  return view.status;
}

/** How long ago `at` was, coarsely ("just now", "42 s ago", "3 min ago", "2 h ago", "5 d ago"). */
export function ago(at: number, now = Date.now()): string {
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** A value as one line of compact JSON, cut to `max` characters (with an ellipsis when cut). */
export function summarize(value: unknown, max = 120): string {
  let line: string;
  try {
    line = JSON.stringify(value) ?? String(value);
  } catch {
    line = String(value);
  }
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A moment as a person reads it, in the browser's time zone ("Thu, Dec 3, 14:05"; the year when not this one). */
export function dateTime(at: number): string {
  const d = new Date(at);
  return d.toLocaleString([], {
    weekday: "short",
    ...(d.getFullYear() === new Date().getFullYear() ? {} : { year: "numeric" }),
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
}

/** How far ahead `at` is, coarsely ("in 40 s", "in 3 min", "in 2 h", "in 5 d"; "now" when due). */
export function until(at: number, now = Date.now()): string {
  const s = Math.floor((at - now) / 1000);
  if (s < 1) return "now";
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.floor(s / 60)} min`;
  if (s < 86_400) return `in ${Math.floor(s / 3600)} h`;
  return `in ${Math.floor(s / 86_400)} d`;
}
