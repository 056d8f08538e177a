import { isSessionId } from "../contract/ids";

/** A directory page's cursor (`<createdAt>.<sessionId>`, as the registry writes it), or undefined. */
export function parseDirectoryCursor(cursor: string): { createdAt: number; id: string } | undefined {
  const dot = cursor.indexOf(".");
  const createdAt = Number(cursor.slice(0, dot));
  const id = cursor.slice(dot + 1);
  return dot > 0 && Number.isSafeInteger(createdAt) && isSessionId(id) ? { createdAt, id } : undefined;
}
