import * as z from "zod";

/**
 * Values built once, on first use, instead of when their module loads: the zod schemas of the
 * contract (and of the tools and protocols) are module constants, and building them all at
 * isolate start costs the Worker's startup CPU for schemas a request may never touch.
 *
 * `lazy(build)` is a stand-in typed as what `build` returns: a Proxy whose every operation (a
 * property read, `in`, a spread, `Object.keys`, `instanceof`, a write) builds the value on the
 * first one and forwards to it; the built value is kept in a closure variable, so later reads
 * cost one check. Methods read through the stand-in run with the stand-in as `this` (so a zod
 * method that keeps `this`, e.g. `.optional()`, `.describe()`, keeps the stand-in); getters run
 * on the built value.
 */
/* @__NO_SIDE_EFFECTS__ */
export function lazy<T extends object>(build: () => T, built?: (value: T, standIn: T) => void): T {
  let value: T | undefined;
  const real = (): T => {
    if (value === undefined) {
      value = build();
      built?.(value, standIn);
    }
    return value;
  };
  const standIn: T = new Proxy({} as T, {
    get: (_target, key) => (value ?? real())[key as keyof T],
    has: (_target, key) => key in (value ?? real()),
    set: (_target, key, v) => Reflect.set(value ?? real(), key, v),
    deleteProperty: (_target, key) => Reflect.deleteProperty(value ?? real(), key),
    defineProperty: (_target, key, descriptor) => Reflect.defineProperty(value ?? real(), key, descriptor),
    ownKeys: () => Reflect.ownKeys(value ?? real()),
    getOwnPropertyDescriptor: (_target, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(value ?? real(), key);
      // the (empty, extensible) target may report a property only as configurable
      if (descriptor) descriptor.configurable = true;
      return descriptor;
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(value ?? real()),
  });
  return standIn;
}

/**
 * A zod schema built on first use (`lazy`): `X.parse`, `X.shape`, `X.extend`, `z.infer<typeof X>`,
 * `instanceof` work as on the schema itself. The stand-in is the schema's identity for zod: a
 * schema built from it holds the stand-in, and the metadata the built schema carries (`.meta()`,
 * `.describe()`: zod's registry is keyed by schema object) is registered for the stand-in too, so
 * `z.toJSONSchema` (the OpenAPI document, tools' JSON schemas) sees the same ids and descriptions.
 */
/* @__NO_SIDE_EFFECTS__ */
export function lazySchema<T extends z.ZodType>(build: () => T): T {
  return lazy(build, (schema, standIn) => {
    if (z.globalRegistry.has(schema)) z.globalRegistry.add(standIn, z.globalRegistry.get(schema)!);
  });
}
