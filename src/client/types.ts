/**
 * Wire types of the public HTTP API (see the README), as a client sees them, one file per area.
 * Written out here rather than imported from the runtime so the SDK stands alone (no zod, no
 * Worker types); test/workers/client/sdk.test.ts checks at compile time that they stay assignable
 * to and from the runtime's contract types.
 */
export * from "./approval-types";
export * from "./delegation-types";
export * from "./deployment-types";
export * from "./event-types";
export * from "./session-types";
