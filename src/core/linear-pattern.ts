import type { RE2JS } from "re2js";

/**
 * Caller-supplied regular expressions (an `outputSchema`'s `pattern`), the one place they are
 * compiled and matched. A JS RegExp backtracks: `^(a+)+$` against 30 `a`s and a `!` takes seconds,
 * and every other request of the isolate waits. Here a pattern is compiled by RE2 (re2js, a pure
 * JavaScript port that runs wherever JavaScript does), whose matching time is linear in the input.
 *
 * Linear is not small: RE2's work per input character grows with the size of the compiled
 * program, and compiling a large program takes long itself (`[a-c]{1,999}` eighty times over:
 * seconds to compile, minutes to match 200,000 characters). So a pattern's size is bounded before
 * it is compiled, and a `PatternBudget` bounds the matching work a caller can ask for.
 *
 * The dialect is what ECMA-262 (with the `u` flag) and RE2 share: a pattern must be a valid JS
 * regular expression with the `u` flag and compile in RE2. JS constructs RE2 lacks (backreferences,
 * lookahead, lookbehind) are refused, never approximated. Remaining differences are RE2's: `\s` is
 * ASCII whitespace, `.` excludes only `\n`. Like JSON Schema's, a pattern is not anchored.
 */

/** The engine (re2js, some 270 KiB), loaded by `loadPatternEngine`, not when an isolate starts. */
let engine: typeof RE2JS | undefined;

/**
 * Loads the engine once; every path that compiles a caller's pattern (`compilePattern`, through an
 * output schema) awaits it first: a one-shot start with an `outputSchema`, a child offering its
 * `structured_output` tool.
 */
export async function loadPatternEngine(): Promise<void> {
  engine ??= (await import("re2js")).RE2JS;
}

/** The longest pattern source, in UTF-16 code units. */
export const MAX_PATTERN_LENGTH = 1000;
/** The largest size (`patternSize`) of one pattern. */
export const MAX_PATTERN_SIZE = 1000;

export interface LinearPattern {
  readonly source: string;
  /** Its size (`patternSize`): the matching work per input character it may cost. */
  readonly size: number;
  /** Whether the pattern matches anywhere in `input` (a JSON Schema pattern is not anchored). */
  test(input: string): boolean;
}

/** A compiled pattern, or why it is refused (a sentence fragment that follows the pattern's name). */
export type CompiledPattern = { ok: true; pattern: LinearPattern } | { ok: false; problem: string };

export function compilePattern(source: string): CompiledPattern {
  if (source.length > MAX_PATTERN_LENGTH) return refused(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  try {
    // only the engine's syntax check: this RegExp is never run
    new RegExp(source, "u");
  } catch (error) {
    return refused(`is not a valid regular expression (ECMA-262 with the u flag): ${syntaxReason(error)}`);
  }
  const scanned = patternSize(source);
  if ("problem" in scanned) return refused(scanned.problem);
  const { size } = scanned;
  if (size > MAX_PATTERN_SIZE)
    return refused(
      `expands to ${size} units, more than ${MAX_PATTERN_SIZE} (a counted repetition x{n} counts n copies of x)`,
    );
  if (engine === undefined)
    throw new Error("compilePattern: the pattern engine is not loaded (await loadPatternEngine())");
  let compiled: RE2JS;
  try {
    compiled = engine.compile(engine.translateRegExp(source));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return refused(`is not supported by the linear-time engine (RE2): ${reason}`);
  }
  return {
    ok: true,
    pattern: { source, size, test: (input) => compiled.test(input) },
  };
}

/**
 * The matching work a caller may cause, spent as `size × (length + 1)` per string matched (RE2's
 * worst case is proportional to both): with a budget of a million, a pattern of size 20 checks
 * 50,000 characters, and the largest pattern 1,000. Past it a string is not matched at all
 * (`spend` answers false).
 */
export class PatternBudget {
  #left: number;

  constructor(units: number) {
    this.#left = units;
  }

  /** Takes the work of matching `pattern` against `input`; false (nothing taken) if not enough is left. */
  spend(pattern: LinearPattern, input: string): boolean {
    const cost = pattern.size * (input.length + 1);
    if (cost > this.#left) return false;
    this.#left -= cost;
    return true;
  }
}

const BACKREFERENCE_OR_LOOKAROUND =
  "backreferences and lookaround are not supported by the linear-time engine (RE2)";

interface Frame {
  /** The sizes of the alternatives before the current one, with one unit per `|`. */
  alternatives: number;
  /** The size of the current alternative so far. */
  sequence: number;
  /** The size of its last atom (what a quantifier repeats); 0 when there is none. */
  last: number;
}

/**
 * An upper bound of the size of the program RE2 compiles `source` to, in units, computed before
 * compiling it: a literal, a class or an escape is 1; `x*`, `x+` and `x?` are x + 1; a group and
 * an alternation add 1; `x{m,n}` is n × (x + 1), `x{m,}` (m + 1) × (x + 1). Or why the pattern
 * cannot run in linear time (a backreference or a lookaround). `source` must be a valid ECMA-262
 * pattern with the `u` flag: braces are quantifiers outside classes and escapes, classes do not nest.
 */
export function patternSize(source: string): { size: number } | { problem: string } {
  const frames: Frame[] = [{ alternatives: 0, sequence: 0, last: 0 }];
  const atom = (size: number) => {
    const frame = frames[frames.length - 1]!;
    frame.sequence += size;
    frame.last = size;
  };
  const repeat = (copies: number) => {
    const frame = frames[frames.length - 1]!;
    const repeated = copies * (frame.last + 1);
    frame.sequence += repeated - frame.last;
    frame.last = repeated;
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      if ((next >= "1" && next <= "9") || (next === "k" && source[i + 2] === "<"))
        return { problem: BACKREFERENCE_OR_LOOKAROUND };
      i += 2;
      // \u{...}, \p{...}, \P{...}: the braces belong to the escape
      if ("upP".includes(next) && source[i] === "{") i = source.indexOf("}", i) + 1;
      atom(1);
    } else if (c === "[") {
      i = classEnd(source, i + 1);
      atom(1);
    } else if (c === "(") {
      i += 1;
      if (source[i] === "?") {
        const kind = source.slice(i + 1, i + 3);
        if (kind[0] === "=" || kind[0] === "!" || kind === "<=" || kind === "<!")
          return { problem: BACKREFERENCE_OR_LOOKAROUND };
        // (?:, (?<name>, (?ims-ims: the prefix is not part of the program
        i = kind[0] === "<" ? source.indexOf(">", i) + 1 : source.indexOf(":", i) + 1;
      }
      frames.push({ alternatives: 0, sequence: 0, last: 0 });
    } else if (c === ")") {
      const frame = frames.pop()!;
      i += 1;
      atom(frame.alternatives + frame.sequence + 1);
    } else if (c === "|") {
      const frame = frames[frames.length - 1]!;
      frame.alternatives += frame.sequence + 1;
      frame.sequence = 0;
      frame.last = 0;
      i += 1;
    } else if (c === "*" || c === "+" || c === "?") {
      repeat(1);
      i += source[i + 1] === "?" ? 2 : 1;
    } else if (c === "{") {
      const close = source.indexOf("}", i);
      const [min, max] = source.slice(i + 1, close).split(",");
      const copies = max === undefined ? Number(min) : max === "" ? Number(min) + 1 : Number(max);
      repeat(Math.max(1, copies));
      i = source[close + 1] === "?" ? close + 2 : close + 1;
    } else {
      atom(1);
      i += 1;
    }
  }
  const outer = frames[0]!;
  return { size: outer.alternatives + outer.sequence };
}

/** The index after the `]` that closes the class whose contents start at `from`. */
function classEnd(source: string, from: number): number {
  let i = from;
  while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
  return i + 1;
}

/**
 * What is wrong with a pattern, without the pattern itself (up to 1,000 characters of caller
 * input): V8 says `Invalid regular expression: /<source>/u: <reason>`.
 */
function syntaxReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.startsWith("Invalid regular expression: /")
    ? message.slice(message.lastIndexOf(": ") + 2)
    : message;
}

function refused(problem: string): CompiledPattern {
  return { ok: false, problem };
}
