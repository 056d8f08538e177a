import type { Flags } from "./flags";

/**
 * A compaction a caller asked for (POST /v1/sessions/:id/compact), kept until a compaction is
 * written (whatever triggered it) or the request is given up. It holds how many summarizing calls
 * were begun for it while the session was idle, so a restart during each never calls without bound.
 */
export class CompactionRequests {
  constructor(readonly flags: Flags) {}

  /** Undefined when none is pending; else the idle summarizing calls begun for it. */
  pending(): number | undefined {
    const raw = this.flags.get("compaction:requested");
    return raw === undefined ? undefined : Number(raw);
  }

  /** Asks for a compaction (a request already pending stays as it is). */
  request(): void {
    if (this.pending() === undefined) this.flags.set("compaction:requested", "0");
  }

  /** One more idle summarizing call begins for the pending request. */
  attempted(): void {
    this.flags.set("compaction:requested", String((this.pending() ?? 0) + 1));
  }

  /** A compaction was written, or the request is given up. */
  done(): void {
    if (this.pending() !== undefined) this.flags.delete("compaction:requested");
  }
}
