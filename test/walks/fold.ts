/**
 * How a walk is counted (README "How it works"): every product file whose code ran, once, with the
 * pure helpers of src/contract and src/core folded into their callers (listed apart, not counted).
 */

/** Folders whose files are pure helpers, folded into the files that call them. */
export const FOLDED = ["src/contract/", "src/core/"] as const;

export interface WalkReport {
  /** What the walk goes from and to. */
  name: string;
  /** The files counted, sorted. */
  files: string[];
  /** The files of the folded folders the walk ran, sorted. */
  folded: string[];
  /** How many times code of each file (counted or folded) started, resumed or got a call's return. */
  entries: Record<string, number>;
  /**
   * The counted files in the order their code ran (started, resumed, or went on after a call
   * returned), a folded file's steps left to the file that called it (a repeat of the file before
   * left out).
   */
  trail: string[];
  /** The steps of `trail` into a file it had already left (a return into a caller among them). */
  reentries: number;
}

export function walkReport(
  name: string,
  walked: { files: ReadonlyMap<string, number>; trail: readonly string[] },
): WalkReport {
  const all = [...walked.files.keys()].sort();
  const trail: string[] = [];
  for (const file of walked.trail) if (!isFolded(file) && trail.at(-1) !== file) trail.push(file);
  const seen = new Set<string>();
  let reentries = 0;
  for (const file of trail) {
    if (seen.has(file)) reentries++;
    seen.add(file);
  }
  return {
    name,
    files: all.filter((file) => !isFolded(file)),
    folded: all.filter(isFolded),
    entries: Object.fromEntries(all.map((file) => [file, walked.files.get(file)!])),
    trail,
    reentries,
  };
}

function isFolded(file: string): boolean {
  return FOLDED.some((folder) => file.startsWith(folder));
}

/** `files` grouped by folder, one line per folder: `folder/ (n): a.ts b.ts`. */
export function byFolder(files: readonly string[]): string[] {
  const folders = new Map<string, string[]>();
  for (const file of files) {
    const cut = file.lastIndexOf("/");
    const folder = file.slice(0, cut + 1);
    folders.set(folder, [...(folders.get(folder) ?? []), file.slice(cut + 1)]);
  }
  return [...folders].map(([folder, names]) => `${folder} (${names.length}): ${names.join(" ")}`);
}

/** The walk as printed: its count, its files by folder, then the folded files apart. */
export function walkText(walk: WalkReport): string {
  return [
    `${walk.name}: ${walk.files.length} files (${walk.trail.length} steps between files, ${walk.reentries} into a file already left)`,
    ...byFolder(walk.files).map((line) => `  ${line}`),
    `  folded, not counted (${walk.folded.length}):`,
    ...byFolder(walk.folded).map((line) => `    ${line}`),
  ].join("\n");
}
