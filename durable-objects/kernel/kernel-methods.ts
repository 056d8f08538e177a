import { peerMethod } from "./methods";

/** The kernel's own methods: the object's machinery as other objects reach it. */
export const kernelMethods = {
  /** A parent's watchdog repairs a lost wake-up; true when there was one to repair. */
  wake: peerMethod({
    absent: async () => false,
    run: (parts: { loop: { armIfOwed(): Promise<boolean> } }) => parts.loop.armIfOwed(),
  }),
};

/**
 * The methods of every table, by name, in one table; a name declared twice is a wiring bug,
 * thrown when the tables are joined (at the Worker's start).
 */
export function joinMethods<T extends object[]>(...tables: T): UnionToIntersection<T[number]> {
  const joined: Record<string, unknown> = {};
  for (const table of tables)
    for (const [name, method] of Object.entries(table)) {
      if (name in joined) throw new Error(`the session method ${name} is declared twice`);
      joined[name] = method;
    }
  return joined as UnionToIntersection<T[number]>;
}

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;
