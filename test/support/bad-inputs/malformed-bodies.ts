import { P, type World } from "./delegation-cases";

/**
 * Seeded generation of malformed request bodies for the body-carrying routes (the generated family
 * of test/workers/http/bad-inputs/delegation-routes.test.ts): one of eight categories (not an
 * object, extra keys, wrong type, missing required field, deep nesting, huge array, invalid UTF-8,
 * truncated JSON) applied to a valid body of a route; a failing body replays from seed and index.
 */

// ---------------------------------------------------------------- the generated family

/** mulberry32: a small seeded PRNG, so a failing body can be replayed from the seed and index. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type FieldKind = "string" | "content" | "enum" | "stringArray" | "toolFilter" | "schema" | "depth";

export interface BodyRoute {
  route: string;
  method: "POST" | "PUT";
  path(w: World): string;
  /** A valid body: every mutation below makes it invalid. */
  base(w: World): Record<string, unknown>;
  fields: Record<string, FieldKind>;
  required: string[];
}

const BODY_ROUTES: BodyRoute[] = [
  {
    route: "POST /v1/sessions",
    method: "POST",
    path: () => P.sessions(),
    base: () => ({ label: "generated", reportDelivery: "quiet" }),
    fields: {
      model: "string",
      persona: "string",
      toolFilter: "toolFilter",
      label: "string",
      providers: "stringArray",
      backgroundMode: "enum",
      reportDelivery: "enum",
    },
    required: [],
  },
  {
    route: "POST /v1/sessions/:id/messages",
    method: "POST",
    path: (w) => `/v1/sessions/${w.a.id}/messages`,
    base: () => ({ content: "hi", idempotencyKey: "generated" }),
    fields: { content: "content", idempotencyKey: "string" },
    required: ["content"],
  },
  {
    route: "POST /v1/sessions/:id/subagents",
    method: "POST",
    path: (w) => P.subagents(w.a.id),
    base: () => ({ provider: "spawn", prompt: "hi", mode: "one-shot", label: "generated", maxDepth: 3 }),
    fields: {
      provider: "string",
      prompt: "content",
      mode: "enum",
      label: "string",
      childId: "string",
      model: "string",
      outputSchema: "schema",
      maxDepth: "depth",
      toolFilter: "toolFilter",
      persona: "string",
    },
    required: ["provider", "prompt", "mode"],
  },
  {
    route: "POST /v1/sessions/:id/subagents/drain",
    method: "POST",
    path: (w) => P.drain(w.a.id),
    base: (w) => ({ childIds: [w.child] }),
    fields: { childIds: "stringArray" },
    required: [],
  },
  {
    route: "POST /v1/sessions/:id/subagents/:childId/messages",
    method: "POST",
    path: (w) => P.followup(w.a.id, w.child),
    base: () => ({ content: [{ type: "text", text: "more" }] }),
    fields: { content: "content" },
    required: ["content"],
  },
  {
    route: "PUT /v1/providers/:name",
    method: "PUT",
    path: () => P.provider("generated-remote"),
    base: () => ({ kind: "remote", url: "https://example.com/agents", token: "secret" }),
    fields: { kind: "enum", url: "string", token: "string" },
    required: ["kind", "url"],
  },
];

const CATEGORIES = [
  "not an object",
  "extra keys",
  "wrong type",
  "missing required field",
  "deep nesting",
  "huge array",
  "invalid UTF-8",
  "truncated JSON",
] as const;
export type Category = (typeof CATEGORIES)[number];

export interface Generated {
  index: number;
  route: BodyRoute;
  category: Category;
  /** The field the malformation went into, when there is one. */
  target?: string;
  bytes: Uint8Array;
}

/** Placeholder for raw JSON text spliced in after serialization (deep nesting is built as text). */
const SPLICE = "\u0000splice\u0000";

export class BodyGenerator {
  constructor(private readonly rand: () => number) {}

  int(min: number, max: number): number {
    return min + Math.floor(this.rand() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  word(): string {
    const alphabet = "abcdefghijklmnopqrstuvwxyz_$-é😀 ";
    return Array.from({ length: this.int(1, 12) }, () => this.pick([...alphabet])).join("");
  }

  /** Any JSON value, up to `depth` levels. */
  json(depth = 3): unknown {
    const kind = this.int(0, depth > 0 ? 6 : 4);
    switch (kind) {
      case 0:
        return null;
      case 1:
        return this.rand() < 0.5;
      case 2:
        return this.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, this.int(-1e6, 1e6)]);
      case 3:
        return this.pick(["", this.word(), "\u0000", "\ud800", "x".repeat(this.int(0, 3000))]);
      case 4:
        return this.word();
      case 5:
        return Array.from({ length: this.int(0, 4) }, () => this.json(depth - 1));
      default:
        return Object.fromEntries(
          Array.from({ length: this.int(1, 4) }, () => [this.word(), this.json(depth - 1)]),
        );
    }
  }

  /** A value no field of this kind accepts. */
  wrong(kind: FieldKind): unknown {
    const nonString = () =>
      this.pick<unknown>([this.int(-9, 9), true, false, null, { value: this.word() }, [this.word()]]);
    switch (kind) {
      case "string":
        return nonString();
      case "content":
        return this.pick<unknown>([
          this.int(-9, 9),
          true,
          null,
          { text: this.word() },
          [this.word()],
          [{ type: "image", url: "https://example.com/x.png" }],
          [{ type: "text" }],
          [{ type: "text", text: "x", extra: 1 }],
        ]);
      case "enum":
        return this.pick<unknown>([`zz-${this.word()}`, nonString(), "ONE-SHOT", ""]);
      case "stringArray":
        return this.pick<unknown>([
          this.word(),
          this.int(0, 9),
          null,
          { 0: "x" },
          [1],
          [null],
          [""],
          [["x"]],
        ]);
      case "toolFilter":
        return this.pick<unknown>([
          {},
          "subagent",
          [],
          null,
          7,
          { allow: "x" },
          { deny: [1] },
          { block: [] },
        ]);
      case "schema":
        return this.pick<unknown>([
          "object",
          7,
          null,
          true,
          [],
          { type: "array" },
          { properties: {} },
          { type: "object", $ref: "#" },
          { type: "object", properties: { x: { type: "date" } } },
        ]);
      case "depth":
        return this.pick<unknown>(["3", null, true, -1, 1.5, [], { n: 1 }, 1e300]);
    }
  }

  build(index: number, w: World): Generated {
    const route = this.pick(BODY_ROUTES);
    const category = this.pick(CATEGORIES);
    const body = route.base(w);
    const fieldNames = Object.keys(route.fields);
    /** Keys added as JSON text, so an own "__proto__" key survives serialization. */
    const extras: [string, unknown][] = [];
    let splice: string | undefined;
    let target: string | undefined;
    let text: string | undefined;
    switch (category) {
      case "not an object": {
        const value = this.pick<unknown>([
          null,
          this.int(-99, 99),
          this.word(),
          true,
          [body],
          Array.from({ length: this.int(0, 5) }, () => this.json(2)),
        ]);
        text = JSON.stringify(value);
        break;
      }
      case "extra keys": {
        for (let i = this.int(1, 5); i > 0; i--) {
          let key = this.pick(["__proto__", "constructor", "", "MODE", this.word(), `x-${this.word()}`]);
          if (key in route.fields) key = `extra-${key}`;
          extras.push([key, this.json()]);
        }
        break;
      }
      case "wrong type": {
        const name = this.pick(fieldNames);
        body[name] = this.wrong(route.fields[name]!);
        break;
      }
      case "missing required field": {
        if (route.required.length > 0) {
          for (const name of route.required) if (this.rand() < 0.5) delete body[name];
          delete body[this.pick(route.required)];
        } else {
          const name = this.pick(fieldNames);
          body[name] = this.wrong(route.fields[name]!);
        }
        break;
      }
      case "deep nesting": {
        const depth = this.int(100, 10_000);
        const [open, close] = this.pick([
          ["[", "]"],
          ['{"a":', "}"],
          ['[{"k":', "}]"],
        ] as const);
        const inner = open === "[" ? "" : "null";
        splice = `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
        const name = this.rand() < 0.8 ? this.pick(fieldNames) : `deep-${this.word()}`;
        body[name] = SPLICE;
        target = name;
        break;
      }
      case "huge array": {
        const name = this.pick(fieldNames);
        const kind = route.fields[name]!;
        const length = this.int(1_001, 150_000);
        body[name] =
          kind === "stringArray"
            ? Array.from({ length: Math.max(length, 300) }, () => "x")
            : kind === "content"
              ? Array.from({ length: Math.min(length, 20_000) }, () => ({ type: "text", text: "" }))
              : Array.from({ length }, (_, i) => i % 10);
        break;
      }
      case "invalid UTF-8":
      case "truncated JSON":
        break;
    }
    text ??= `{${[...Object.entries(body), ...extras].map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`;
    if (splice !== undefined) text = text.replace(JSON.stringify(SPLICE), splice);
    let bytes = new TextEncoder().encode(text);
    if (category === "truncated JSON") bytes = bytes.slice(0, this.int(1, bytes.length - 1));
    if (category === "invalid UTF-8") bytes = this.corrupt(bytes);
    return { index, route, category, bytes, ...(target === undefined ? {} : { target }) };
  }

  /**
   * Inserts invalid UTF-8 at a structural position (just after the opening brace), so even a
   * decoder that replaces bad bytes is left with text that is not JSON; sometimes also inside a
   * string, where a lenient decoder would otherwise let the body through.
   */
  corrupt(bytes: Uint8Array): Uint8Array {
    const bad = this.pick([
      [0xff],
      [0xc3, 0x28],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x28, 0x8c, 0x28],
      [0x80],
      [0xfe, 0xff],
    ]);
    const out = [bytes[0]!, ...bad, ...bytes.slice(1)];
    const quote = out.indexOf(0x22, bad.length + 2);
    if (this.rand() < 0.5 && quote > 0) out.splice(quote + 1, 0, ...this.pick([[0xff], [0xc0, 0xaf]]));
    return new Uint8Array(out);
  }
}
