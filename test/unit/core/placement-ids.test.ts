import { describe, expect, it } from "vitest";
import {
  childJurisdiction,
  jurisdictionOfId,
  newPlacedId,
  placeId,
  reservedIdUnder,
} from "../../../src/core/placement";

/**
 * Placement ids (semantics.md §1.6), pure: a jurisdiction is encoded in a session id (UUID v8), a
 * reserved child id is derived under its parent (and a plain one from before, moved into the
 * jurisdiction deterministically), and a child never leaves its parent's.
 */

describe("placement ids (semantics.md §1.6)", () => {
  it("encodes a jurisdiction in a UUID v8 id and nothing in a v4 id", () => {
    expect(jurisdictionOfId(newPlacedId())).toBeUndefined();
    const eu = newPlacedId("eu");
    expect(eu).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-81[0-9a-f]{2}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(jurisdictionOfId(eu)).toBe("eu");
    expect(jurisdictionOfId(newPlacedId("fedramp"))).toBe("fedramp");
    // a v8 id with another digit after the version names no jurisdiction
    expect(jurisdictionOfId("00000000-0000-8300-8000-000000000000")).toBeUndefined();
  });

  it("moves a plain reserved id into the jurisdiction deterministically and refuses a foreign one", () => {
    const plain = crypto.randomUUID();
    const moved = placeId(plain, "eu");
    expect(moved.ok && jurisdictionOfId(moved.value)).toBe("eu");
    expect(placeId(plain, "eu")).toEqual(moved);
    expect(placeId(plain, undefined)).toEqual({ ok: true, value: plain });
    const eu = newPlacedId("eu");
    expect(placeId(eu, "eu")).toEqual({ ok: true, value: eu });
    expect(placeId(eu, "fedramp")).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(placeId(eu, undefined)).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
  });

  it("derives a reserved child id from its parent and the reserved id, in the child's jurisdiction", () => {
    const parent = crypto.randomUUID();
    const reserved = crypto.randomUUID();
    const id = reservedIdUnder(parent, reserved, undefined);
    expect(id).toEqual(reservedIdUnder(parent, reserved.toUpperCase(), undefined)); // the same child on a retry
    expect(id.ok && id.value).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-80[0-9a-f]{2}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(id.ok && id.value).not.toBe(reserved);
    // another parent's reservation of the same id names another child
    expect(reservedIdUnder(crypto.randomUUID(), reserved, undefined)).not.toEqual(id);
    const eu = reservedIdUnder(parent, reserved, "eu");
    expect(eu.ok && jurisdictionOfId(eu.value)).toBe("eu");
    expect(reservedIdUnder(parent, newPlacedId("eu"), "fedramp")).toMatchObject({
      ok: false,
      code: "INVALID_REQUEST",
    });
  });

  it("a child keeps its parent's jurisdiction; a free parent's child may enter one", () => {
    expect(childJurisdiction("eu", undefined)).toEqual({ ok: true, value: "eu" });
    expect(childJurisdiction("eu", "eu")).toEqual({ ok: true, value: "eu" });
    expect(childJurisdiction("eu", "fedramp")).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(childJurisdiction(undefined, "fedramp")).toEqual({ ok: true, value: "fedramp" });
    expect(childJurisdiction(undefined, undefined)).toEqual({ ok: true, value: undefined });
  });
});
