/**
 * Seeds that found runtime bugs. The default campaign always runs them (they are inside 1..200
 * today; the list keeps them running if the default range shrinks), so `npm run test:faults`
 * stays red until the bug is fixed and then guards against its return. A seed's schedule is a
 * pure function of the seed and of scenario.ts: after any change to the generator, re-find them
 * (FAULT_SEEDS=a-b) and update this list. Found against runtime commit 1530322.
 */
export const REGRESSION_SEEDS: readonly { seed: number; bug: string }[] = [
  {
    seed: 61,
    bug:
      "a crash of the parent inside a send_message tool call: the re-run tool call delivers the " +
      "follow-up twice (FollowupInput has no idempotency key), and the first delivery's epoch, never " +
      "reserved by the parent (ContinuableParent.followup reserves only after the RPC returns), is " +
      "repaired to 'published' but its held settlement notice is dropped (Epochs.publish reads " +
      "pending_notice through RETURNING after setting it to NULL): no subagent/end, epoch stuck",
  },
  {
    seed: 110,
    bug:
      "a crash of the parent inside a `subagent` tool call (run_in_background, continuable): the " +
      "re-run tool call starts a second child (continuable starts have no per-call idempotency)",
  },
  {
    seed: 77,
    bug:
      "a storage failure in a continuable child after its `report` tool call delivered: the re-run " +
      "call sent the report again under a new envelope id (a random message id), so the parent " +
      "received it twice; found against 80d7a73 by the campaign's storage faults",
  },
];
