/**
 * The order between a session's features where order matters, declared once, by the names the
 * parts carry (test/unit/session/feature-order.test.ts holds it: a change here is a change of
 * behaviour, made on purpose). The composition (session-parts.ts) hands the parts to the kernel in
 * these orders; a part missing from an order, or a name no part carries, is a wiring bug thrown
 * when the object opens.
 */

/**
 * The drive loop's order (each pass runs the parts' hooks in it): a deletion first (its erasure
 * ends the pass), then retention; a cut-short drain before any model step; approvals that timed
 * out, scheduled messages that are due and a turn's deadline before the step; the step; the
 * outbox after it; then the runs, the children and the transports, whose repairs wait for quiet
 * steps; the child watchdog and the trace exporter last.
 */
export const DRIVE_ORDER = [
  "deletion",
  "retention",
  "continuable child",
  "approvals",
  "schedules",
  "turn deadline",
  "turn driver",
  "delivery",
  "one-shot runs",
  "local transport",
  "continuable children",
  "one-shot child",
  "remote transport",
  "ACP transport",
  "a2a transport",
  "callback sender",
  "child watch",
  "trace export",
] as const;

/**
 * The order of the hooks that run inside the transaction that appends a turn's `turn/end`: the
 * runs first (the turn's foreground children get their cancel), then the one-shot child (its
 * result), then the approvals the turn left pending are denied (before a callback reads the
 * turn), and last the callback that carries the turn's result out of the deployment.
 */
export const TURN_END_ORDER = ["one-shot runs", "one-shot child", "approvals", "callback sender"] as const;

/**
 * The order in which a session's parts stop when it is deleted, inside the transaction that marks
 * it: the turn first (its end runs the turn-end hooks, which may send what the parent must know),
 * then the schedules, the runs (cancelled), and last what the outbox still owed, withdrawn.
 */
export const STOP_ORDER = ["conversation", "schedules", "one-shot runs", "delivery"] as const;
