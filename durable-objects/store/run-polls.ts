import type { ReadMemo } from "./read-memo";
import type { RunRow } from "./run-row";

/**
 * The hot polls of the `runs` table (runs.ts) kept across a write whose effect on them is known:
 * a start, a publication or a settlement changes one run, and the drive loop's next pass would
 * otherwise ask SQLite again for every poll that write forgot.
 */

/** The hot polls' answers as known before a write (undefined: not known). */
export interface KnownPolls {
  startingIds: readonly string[] | undefined;
  runningLocalChildren: readonly string[] | undefined;
  unsettledRemote: readonly RunRow[] | undefined;
  nextHeldExpiry: { value: number | undefined } | undefined;
}

/** How a write changes each list poll (absent: unchanged; present but undefined: forgotten). */
export interface PollChange {
  startingIds?: ((ids: readonly string[]) => readonly string[]) | undefined;
  runningLocalChildren?: ((ids: readonly string[]) => readonly string[]) | undefined;
  unsettledRemote?: ((rows: readonly RunRow[]) => readonly RunRow[]) | undefined;
}

/** The polls' answers known now (before a write), for `keepPolls`. */
export function knownPolls(memo: ReadMemo): KnownPolls {
  return {
    startingIds: memo.known<readonly string[]>("startingIds", [])?.value,
    runningLocalChildren: memo.known<readonly string[]>("runningLocalChildren", [])?.value,
    unsettledRemote: memo.known<readonly RunRow[]>("unsettledRemote", [])?.value,
    nextHeldExpiry: memo.known<number | undefined>("nextHeldExpiry", undefined),
  };
}

/**
 * After a write whose effect on the polls is known: each poll known before is remembered as
 * `change` makes it (unchanged when `change` does not name it; forgotten when it names it as
 * undefined), and the written run's row when the write knows it. The held starts' expiry is
 * kept as it was: only `hold`, `unhold` and `delete` move it, and they forget every poll.
 */
export function keepPolls(
  memo: ReadMemo,
  polls: KnownPolls,
  change: PollChange,
  written?: { runId: string; row: RunRow },
): void {
  const lists = ["startingIds", "runningLocalChildren", "unsettledRemote"] as const;
  for (const key of lists) {
    const known = polls[key] as readonly never[] | undefined;
    if (known === undefined) continue;
    if (!(key in change)) memo.remember(key, known);
    else {
      const next = change[key] as ((value: readonly never[]) => readonly unknown[]) | undefined;
      if (next) memo.remember(key, next(known));
    }
  }
  if (polls.nextHeldExpiry) memo.remember("nextHeldExpiry", polls.nextHeldExpiry.value);
  if (written) memo.remember(`get:${written.runId}`, written.row);
}
