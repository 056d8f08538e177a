import { compact } from "./compact";
import { JURISDICTIONS, type Jurisdiction, type LocationHint, type Placement } from "../contract/placement";
import { type Failure, fail, type Outcome, ok } from "../contract/errors";
import { sha256HexSync } from "./sha256";

/**
 * Where a session's Durable Object lives. A location hint only steers where an object is first
 * created; a jurisdiction confines where it runs and stores data, for good. Children inherit their
 * parent's jurisdiction and can never leave it. Pure.
 *
 * A session id must keep resolving to the same object, and an object in a jurisdiction is reached
 * only through `SESSIONS.jurisdiction(j)`. So the jurisdiction is encoded in the id itself: a
 * session in a jurisdiction has a UUID version 8 id whose next hex digit names it (`1` eu,
 * `2` fedramp): `xxxxxxxx-xxxx-81xx-yxxx-xxxxxxxxxxxx` lives in the EU. Every other id (random
 * UUID v4 ids above all) lives in no jurisdiction. Any Worker or object can route any id without
 * a lookup, and `GET /v1/sessions/:id` keeps working for every session.
 */

export {
  JURISDICTIONS,
  type Jurisdiction,
  JurisdictionSchema,
  LOCATION_HINTS,
  type LocationHint,
  LocationHintSchema,
  type Placement,
} from "../contract/placement";

const CODE: Record<Jurisdiction, string> = { eu: "1", fedramp: "2" };
const BY_CODE = new Map<string, Jurisdiction>(JURISDICTIONS.map((j) => [CODE[j], j]));
/** Offsets in the canonical 36-character form: the version digit and the one after it. */
const VERSION_AT = 14;
const CODE_AT = 15;

/** The jurisdiction a session id routes to, if any (ids are assumed to be UUIDs). */
export function jurisdictionOfId(id: string): Jurisdiction | undefined {
  if (id.length !== 36 || id[VERSION_AT] !== "8") return undefined;
  return BY_CODE.get(id[CODE_AT] ?? "");
}

/** A fresh random session id for a session in `jurisdiction` (a plain UUID v4 without one). */
export function newPlacedId(jurisdiction?: Jurisdiction): string {
  const id = crypto.randomUUID();
  return jurisdiction === undefined ? id : encode(id, jurisdiction);
}

/**
 * The id of a session created with an idempotency key: derived from a hex digest (at least 32
 * digits) of tenant and key, so the same create lands on the same object. UUID version 8; without
 * a jurisdiction the digit after the version is `0` (names none).
 */
export function placedIdFromDigest(hex: string, jurisdiction?: Jurisdiction): string {
  const h = hex.toLowerCase();
  const variant = "89ab"[Number.parseInt(h[16] ?? "0", 16) & 3];
  const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-80${h.slice(14, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  return jurisdiction === undefined ? id : encode(id, jurisdiction);
}

/**
 * The id of the child a caller reserved as `childId` under the session `parentId`: a UUID version
 * 8 derived from both (SHA-256), in the child's jurisdiction. The same parent and `childId` always
 * give the same id, so a retried start finds its child; and a reserved id names a child only under
 * its own parent, so no caller can steer a child onto an id that any other session, tenant or
 * keyed create uses (or learn whether one exists by trying). A `childId` that names another
 * jurisdiction is refused. (The part before the first newline can never be a tenant name, so these
 * digests never meet a keyed create's.)
 */
export function reservedIdUnder(
  parentId: string,
  childId: string,
  jurisdiction: Jurisdiction | undefined,
): Outcome<string> {
  const foreign = foreignJurisdiction(childId, jurisdiction);
  if (foreign) return foreign;
  return ok(
    placedIdFromDigest(sha256HexSync(`reserved:${parentId}\n${childId.toLowerCase()}`), jurisdiction),
  );
}

/**
 * Where a reserved `childId` was placed before reserved ids were derived under their parent: the
 * id itself, moved into the jurisdiction (an id that already names it kept). A parent's records
 * from then may still hold such ids; they are never placed anew.
 */
export function placeId(id: string, jurisdiction: Jurisdiction | undefined): Outcome<string> {
  const foreign = foreignJurisdiction(id, jurisdiction);
  if (foreign) return foreign;
  return ok(jurisdictionOfId(id) === jurisdiction ? id : encode(id.toLowerCase(), jurisdiction!));
}

function foreignJurisdiction(id: string, jurisdiction: Jurisdiction | undefined): Failure | undefined {
  const named = jurisdictionOfId(id);
  if (named === undefined || named === jurisdiction) return undefined;
  return fail(
    "INVALID_REQUEST",
    `childId names jurisdiction ${named}, but the child is placed ${jurisdiction === undefined ? "in no jurisdiction" : `in ${jurisdiction}`}`,
  );
}

/** A child's jurisdiction: its parent's; a request may name only that one, or one for a free parent. */
export function childJurisdiction(
  parent: Jurisdiction | undefined,
  asked: Jurisdiction | undefined,
): Outcome<Jurisdiction | undefined> {
  if (parent !== undefined && asked !== undefined && asked !== parent) {
    return fail(
      "INVALID_REQUEST",
      `jurisdiction: this session is confined to ${parent}; its children cannot leave it (asked ${asked})`,
    );
  }
  return ok(parent ?? asked);
}

/** The placement fields of a header or view, only those that are set. */
export function placementOf(value: {
  jurisdiction?: Jurisdiction | undefined;
  locationHint?: LocationHint | undefined;
}): Placement {
  return {
    ...compact({ jurisdiction: value.jurisdiction }),
    ...compact({ locationHint: value.locationHint }),
  };
}

function encode(id: string, jurisdiction: Jurisdiction): string {
  return `${id.slice(0, VERSION_AT)}8${CODE[jurisdiction]}${id.slice(CODE_AT + 1)}`;
}
