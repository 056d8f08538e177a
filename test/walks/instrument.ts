import { relative } from "node:path";
import { type Plugin, parseAst } from "vite";

/**
 * The instrumentation behind `npm run walks` (vitest.walks.config.ts): every function of the
 * product's sources records its file when its code runs, so a walk can name every file whose code
 * ran between two points. It rewrites the JavaScript the pool is served (after TypeScript was
 * stripped), never a file on disk.
 *
 * Code runs in a file when one of its functions is entered (declarations, expressions, arrows,
 * methods, accessors, constructors), when one of its class fields is initialized (a class with no
 * constructor of its own is constructed that way), when a suspended function of it resumes (after
 * each `await`, each `yield` and each turn of a `for await`: a loop entered before a walk began
 * that goes on during it runs its file's code) and when a call it made returns to it (which adds
 * no file to a walk, its caller having run, but shows in the walk's trail as a step back). Module
 * bodies run once, when the module loads, and are not recorded: a walk runs after a warm-up.
 */

/** The folders of the product whose files are instrumented (every `.ts` file under them). */
export const PRODUCT_FOLDERS = ["src", "durable-objects"] as const;

/**
 * The recorder, on `globalThis.__walks`, installed by the first instrumented module that loads:
 * `on` says whether a walk is being recorded, `files` counts its entries per file, `trail` is its
 * files in the order their code started or resumed (a repeat of the file before left out, at most
 * TRAIL_MAX of them); `entries` counts every entry, recorded or not (a count that stops moving
 * means the isolate is quiet). recorder.ts reads it.
 */
const TRAIL_MAX = 100_000;
const RECORDER =
  "globalThis.__walks ??= { on: false, files: new Map(), trail: [], entries: 0, " +
  "e(f) { this.entries++; if (!this.on) return; this.files.set(f, (this.files.get(f) ?? 0) + 1); " +
  `if (this.trail.at(-1) !== f && this.trail.length < ${TRAIL_MAX}) this.trail.push(f); }, ` +
  "v(x, f) { this.e(f); return x; } };";

/** The product file `id` names, relative to `root` (undefined for any other module). */
export function productFile(root: string, id: string): string | undefined {
  const path = relative(root, id.split("?")[0]!).replaceAll("\\", "/");
  if (!path.endsWith(".ts") || path.endsWith(".d.ts")) return undefined;
  return PRODUCT_FOLDERS.some((folder) => path.startsWith(`${folder}/`)) ? path : undefined;
}

/** The Vite plugin: instruments the product's modules as the pool loads them. */
export function walksInstrument(root: string): Plugin {
  return {
    name: "walks-instrument",
    // after the TypeScript transform: the code parsed here is JavaScript
    enforce: "post",
    transform(code, id) {
      const file = productFile(root, id);
      if (file === undefined) return undefined;
      return { code: instrument(code, file), map: null };
    },
  };
}

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

interface Insertion {
  at: number;
  text: string;
  /** Closing text goes before opening text at the same place; openings outer first, closings inner first. */
  order: number;
}

/** `code` (a module's JavaScript) with a recorder call wherever code of `file` starts or resumes running. */
export function instrument(code: string, file: string): string {
  const name = JSON.stringify(file);
  const enter = `globalThis.__walks.e(${name});`;
  const insertions: Insertion[] = [];
  let visited = 0;
  const open = (at: number, text: string) => insertions.push({ at, text, order: ++visited });
  const close = (at: number, text: string) => insertions.push({ at, text, order: -1e9 - ++visited });
  /** `expression` evaluated after the file is recorded. */
  const prefixExpression = (node: Node) => {
    open(node.start, `(${enter.slice(0, -1)}, `);
    close(node.end, ")");
  };
  /** `expression`'s value, the file recorded once it is known (a resumption, a return). */
  const afterExpression = (node: Node) => {
    open(node.start, "globalThis.__walks.v(");
    close(node.end, `, ${name})`);
  };
  /** A statement body recorded at its start (a block gets the call as its first statement). */
  const enterBody = (body: Node) => {
    if (body.type === "BlockStatement") open(body.start + 1, enter);
    else {
      open(body.start, `{${enter} `);
      close(body.end, "}");
    }
  };

  /**
   * `spine`: `node` is the callee or object of a link of an optional chain, whose value may not be
   * taken apart from the chain's (`a?.b().c` short-circuits whole): the chain records as a whole.
   */
  /** How many functions (or instance fields) enclose the node visited: 0 in the module's body. */
  let depth = 0;
  const visit = (node: Node, spine = false): void => {
    switch (node.type) {
      case "FunctionDeclaration":
      case "FunctionExpression":
      case "ArrowFunctionExpression": {
        const body = node.body as Node | null;
        if (body) {
          if (body.type === "BlockStatement") open(body.start + 1, enter);
          else prefixExpression(body);
        }
        depth++;
        visitChildren(node);
        depth--;
        return;
      }
      case "PropertyDefinition":
        if (node.static || !node.value) break;
        prefixExpression(node.value as Node);
        depth++;
        visitChildren(node);
        depth--;
        return;
      case "AwaitExpression":
      case "YieldExpression":
        if (depth > 0) afterExpression(node);
        break;
      case "ForOfStatement":
        if (node.await && depth > 0) enterBody(node.body as Node);
        break;
      // a call's return: the caller's code goes on (a step back into its file)
      case "ChainExpression":
        if (depth > 0) afterExpression(node);
        visit(node.expression as Node, true);
        return;
      case "CallExpression":
      case "NewExpression":
        if (!spine && depth > 0) afterExpression(node);
        visit(node.callee as Node, spine);
        for (const argument of node.arguments as Node[]) visit(argument);
        return;
      case "MemberExpression":
        visit(node.object as Node, spine);
        visit(node.property as Node);
        return;
    }
    visitChildren(node);
  };
  const visitChildren = (node: Node): void => {
    for (const key of Object.keys(node)) {
      const child = node[key];
      if (Array.isArray(child)) {
        for (const item of child) if (isNode(item)) visit(item);
      } else if (isNode(child)) visit(child);
    }
  };
  visit(parseAst(code) as unknown as Node);

  insertions.sort((a, b) => a.at - b.at || a.order - b.order);
  let out = "";
  let from = 0;
  for (const { at, text } of insertions) {
    out += code.slice(from, at) + text;
    from = at;
  }
  // on the first line, so the module's line numbers stay its own
  return `${RECORDER} ${out}${code.slice(from)}`;
}

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && typeof (value as Node).type === "string";
}
