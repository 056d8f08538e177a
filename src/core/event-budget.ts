/**
 * The byte budget of one event row. SQLite rows on Durable Objects are capped at 2 MB; a model
 * or tool that produces more must never turn into a storage error that wedges a turn. Text blocks
 * are cut (whole code points) with a visible marker until the event fits.
 */

export const MAX_EVENT_BYTES = 512 * 1024;
export const TRUNCATION_MARKER = "\n…[truncated: the event exceeded its size budget]";

const encoder = new TextEncoder();

export function byteLength(text: string): number {
  return encoder.encode(text).byteLength;
}

/** Returns the data unchanged when it fits, else a copy whose longest text fields are cut. */
export function fitEvent<T>(data: T, budget = MAX_EVENT_BYTES): { data: T; truncated: boolean } {
  let json = JSON.stringify(data);
  if (byteLength(json) <= budget) return { data, truncated: false };
  const copy = JSON.parse(json) as T;
  const texts = collectTexts(copy);
  texts.sort((a, b) => b.get().length - a.get().length);
  for (const field of texts) {
    const over = byteLength(json) - budget;
    if (over <= 0) break;
    const value = field.get();
    const keep = Math.max(0, byteLength(value) - over - byteLength(TRUNCATION_MARKER) - 16);
    field.set(cutToBytes(value, keep) + TRUNCATION_MARKER);
    json = JSON.stringify(copy);
  }
  return { data: copy, truncated: true };
}

function cutToBytes(text: string, bytes: number): string {
  let used = 0;
  let out = "";
  for (const ch of text) {
    const size = byteLength(ch);
    if (used + size > bytes) break;
    used += size;
    out += ch;
  }
  return out;
}

interface TextField {
  get(): string;
  set(value: string): void;
}

function collectTexts(node: unknown, out: TextField[] = []): TextField[] {
  if (Array.isArray(node)) {
    node.forEach((value, i) => {
      if (typeof value === "string") out.push({ get: () => node[i] as string, set: (v) => (node[i] = v) });
      else collectTexts(value, out);
    });
  } else if (typeof node === "object" && node !== null) {
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const value = record[key];
      if (typeof value === "string")
        out.push({ get: () => record[key] as string, set: (v) => (record[key] = v) });
      else collectTexts(value, out);
    }
  }
  return out;
}
