import type { Envelope } from "../../src/contract/envelope";
import type { TableSql } from "./first-use-tables";

/**
 * Which envelopes this session received, per sender link: `links` holds the next position each
 * sender's link expects, `seen` every envelope id applied. Delivery (messaging/delivery.ts) asks
 * both inside the transaction that applies the envelope, so an envelope counts as received
 * exactly when its effects are committed.
 */
export class Receipts {
  readonly #links: TableSql;
  readonly #seen: TableSql;

  constructor(links: TableSql, seen: TableSql) {
    this.#links = links;
    this.#seen = seen;
  }

  /**
   * Per-link order at the receiver: apply envelope n only after n-1; older ones are duplicates.
   * An envelope whose `after` says the positions in between will never come (the sender
   * dead-lettered or withdrew them) is applied past that gap, so one dead letter never stalls
   * the rest of its link (semantics.md §11.2). `next` moves the link past the envelope.
   */
  linkOrder(envelope: Envelope): "next" | "early" | "old" {
    if (envelope.linkSeq === undefined) return "next"; // direct deliveries (reports) carry no link order
    const row = this.#links
      .exec<{ next_seq: number }>("SELECT next_seq FROM links WHERE sender = ?", envelope.from)
      .toArray()[0];
    const next = row?.next_seq ?? 1;
    if (envelope.linkSeq < next) return "old";
    const pastGap = envelope.after !== undefined && envelope.after < next;
    if (envelope.linkSeq > next && !pastGap) return "early";
    this.#links.exec(
      "INSERT INTO links (sender, next_seq) VALUES (?, ?) ON CONFLICT (sender) DO UPDATE SET next_seq = excluded.next_seq",
      envelope.from,
      envelope.linkSeq + 1,
    );
    return "next";
  }

  /** Records `envelopeId` as received; true the first time only (an id seen before is a duplicate). */
  firstSeen(envelopeId: string): boolean {
    return (
      this.#seen
        .exec(
          "INSERT INTO seen (envelope_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING envelope_id",
          envelopeId,
          Date.now(),
        )
        .toArray().length > 0
    );
  }
}
