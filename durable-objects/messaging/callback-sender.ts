import { CALLBACK_TARGET, type CallbackEnvelope } from "../../src/contract/envelope";
import type { TurnEndReason } from "../../src/contract/events";
import { turnResult } from "../store/turn-result";
import {
  type CallbackBody,
  SIGNATURE_HEADER,
  signCallback,
  TIMESTAMP_HEADER,
} from "../../src/providers/remote-protocol";
import { outboundFetch } from "../../src/platform/outbound-fetch";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

/** A callback that gets no answer within this long is a failed attempt (the outbox retries). */
const CALLBACK_TIMEOUT_MS = 10_000;

/**
 * Remote delegation, remote side: a session created with a `callback` (by another deployment's
 * remote provider) posts its first turn's result there. The result is written to the outbox in
 * the transaction that ends the turn, so it is durable; the outbox delivers it with retries and
 * dead-letters it after its attempts (the parent then still learns the result by polling). Each
 * attempt is signed afresh (its timestamp must be recent); the URL and secret are read from the
 * header at send time and never written anywhere else. The post goes through `outboundFetch`: a
 * redirect is followed on the callback URL's origin only, so the signed result never goes elsewhere
 * (a redirect away is a failed attempt).
 */
export class CallbackSender implements SessionPart {
  readonly name = "callback sender";
  readonly #ctx: SessionContext;

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  /** Inside the transaction that appends `turn/end`: the first turn's result goes to the outbox. */
  onTurnEnd(_turn: number, _reason: TurnEndReason, turnStartSeq: number): void {
    const header = this.#ctx.header();
    if (!header?.callback) return;
    const { log, outbox } = this.#ctx.stores;
    const id = `callback:${header.id}`;
    if (outbox.has(id)) return; // the first turn's result only
    const result = turnResult(log, turnStartSeq, false);
    outbox.enqueue({ v: 1, id, from: header.id, to: CALLBACK_TARGET, kind: "callback", result });
  }

  /**
   * One delivery attempt. Resolves when the parent took the result, or already had it (409: it
   * learned it by polling, or an earlier attempt's answer was lost); throws otherwise.
   */
  async send(envelope: CallbackEnvelope): Promise<void> {
    const header = this.#ctx.header();
    if (!header?.callback) throw new Error("this session has no callback");
    const body: CallbackBody = { v: 1, session: header.id, result: envelope.result };
    const text = JSON.stringify(body);
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = await signCallback(header.callback.secret, timestamp, text);
    // a timer of our own, cleared when the attempt is over (AbortSignal.timeout's would outlive it)
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error("timed out")), CALLBACK_TIMEOUT_MS);
    let response: Response;
    try {
      response = await outboundFetch(header.callback.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [TIMESTAMP_HEADER]: String(timestamp),
          [SIGNATURE_HEADER]: signature,
        },
        body: text,
        signal: controller.signal,
      });
      await response.body?.cancel();
    } finally {
      clearTimeout(timer);
    }
    if (response.ok || response.status === 409) return;
    throw new Error(`the callback was answered with HTTP ${response.status}`);
  }
}
