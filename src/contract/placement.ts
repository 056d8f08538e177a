import * as z from "zod";
import { lazySchema } from "./lazy";

/**
 * Where a session's Durable Object may live: the location hints and jurisdictions of the wire
 * (what a request may name and a header records). How ids encode a jurisdiction is
 * `core/placement.ts`.
 */

export const LOCATION_HINTS = ["wnam", "enam", "weur", "eeur", "apac", "oc", "afr", "me", "sam"] as const;
export const JURISDICTIONS = ["eu", "fedramp"] as const;

export type LocationHint = (typeof LOCATION_HINTS)[number];
export type Jurisdiction = (typeof JURISDICTIONS)[number];

export const LocationHintSchema = lazySchema(() => z.enum(LOCATION_HINTS));
export const JurisdictionSchema = lazySchema(() => z.enum(JURISDICTIONS));

/** What a session records about its placement (header, views, listings). */
export interface Placement {
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
}
