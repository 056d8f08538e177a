import { type Failure, fail } from "../contract/errors";
import { positiveInt } from "./positive-int";

/**
 * The documented quotas (docs/semantics.md §8, "Quotas"), pure: what each one allows, and the
 * refusal a request gets past it. Each limit comes from a Worker var; an absent or malformed var
 * (not a positive safe integer) means the default, as for every other numeric var.
 *
 * - Sessions in one tree (`MAX_SESSIONS_PER_TREE`): the top-level session counts itself and every
 *   descendant of every mode; a start that would make the tree bigger is `422 QUOTA_EXCEEDED`.
 * - Pending inbox messages per session (`MAX_PENDING_MESSAGES`): a message that would join that
 *   many unclaimed ones is `429 INBOX_FULL` (a turn's claim frees a place).
 * - Log bytes per session (`MAX_LOG_BYTES`): once the log holds that many bytes of event data,
 *   new work is `422 QUOTA_EXCEEDED` and the open turn ends at its next step.
 */

export const DEFAULT_MAX_SESSIONS_PER_TREE = 10_000;
export const DEFAULT_MAX_PENDING_MESSAGES = 1_000;
export const DEFAULT_MAX_LOG_BYTES = 268_435_456;

/**
 * Whether a tree of `size` sessions (its top-level session included) may get one more; else the
 * refusal.
 */
export function treeRefusal(size: number, raw: string | undefined): Failure | undefined {
  const max = positiveInt(raw, DEFAULT_MAX_SESSIONS_PER_TREE);
  if (size < max) return undefined;
  return fail(
    "QUOTA_EXCEEDED",
    `this session's tree already holds ${max} sessions (MAX_SESSIONS_PER_TREE); no more children can start in it`,
  );
}

/** The refusal of a message to a session whose inbox holds `max` pending messages. */
export function inboxFull(max: number): Failure {
  return fail(
    "INBOX_FULL",
    `this session already has ${max} pending messages (MAX_PENDING_MESSAGES); retry once its turns have taken some`,
  );
}

/** Why a log at or past its quota takes no new work (a refusal's message; a turn's `error` after the code). */
export function logQuotaMessage(bytes: number, max: number): string {
  return `this session's log holds ${bytes} bytes, at or past its quota of ${max} (MAX_LOG_BYTES); it takes no new work`;
}

/** The refusal of new work for a log holding `bytes`, if it is at or past its quota. */
export function logRefusal(bytes: number, raw: string | undefined): Failure | undefined {
  const max = positiveInt(raw, DEFAULT_MAX_LOG_BYTES);
  return bytes < max ? undefined : fail("QUOTA_EXCEEDED", logQuotaMessage(bytes, max));
}

/** Any code unit outside ASCII (a surrogate half included). */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The UTF-8 length of `text`, as SQLite stores it (a lone surrogate becomes U+FFFD, 3 bytes).
 * ASCII text, most of any log, is measured by one native scan.
 */
export function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit < 0xdc00 && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit < 0xe000;
}

/**
 * What a caller's message may join: `capacity` pending items (none once the log is at its quota:
 * the session takes no new work), and the refusal it gets when that many are pending.
 */
export function messageQuota(
  logBytes: number,
  limits: { inboxCap: string | undefined; logCap: string | undefined },
): { capacity: number; refusal: Failure } {
  const closed = logRefusal(logBytes, limits.logCap);
  if (closed) return { capacity: 0, refusal: closed };
  const max = positiveInt(limits.inboxCap, DEFAULT_MAX_PENDING_MESSAGES);
  return { capacity: max, refusal: inboxFull(max) };
}
