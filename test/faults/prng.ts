/** A small seeded PRNG (mulberry32) and the draws the schedule generator needs. */

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = mulberry32(seed * 2654435761 + 1);
  }

  float(): number {
    return this.#next();
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.#next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.#next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.#next() * items.length)]!;
  }

  /** Picks by weight: `[[value, weight], ...]`. */
  weighted<T>(choices: readonly (readonly [T, number])[]): T {
    const total = choices.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.#next() * total;
    for (const [value, weight] of choices) {
      roll -= weight;
      if (roll < 0) return value;
    }
    return choices[choices.length - 1]![0];
  }

  /** A v4-shaped UUID drawn from the seed (child ids the test reserves up front). */
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.#next() * 16).toString(16));
    hex[12] = "4";
    hex[16] = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
    const s = hex.join("");
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }
}
