import { expect } from "vitest";
import { openStream } from "../support/api";
import { sleep, type WireEvent } from "../support/logs";

/**
 * The walks' side of the recorder the instrumented product writes into (instrument.ts): start a
 * walk, stop it at the moment its end is observed, wait until the isolate is quiet; and a
 * session's event stream as a subscriber reads it.
 */

/** What instrument.ts installs (its RECORDER). */
interface Recorder {
  on: boolean;
  files: Map<string, number>;
  trail: string[];
  entries: number;
}

function recorder(): Recorder {
  const found = (globalThis as { __walks?: Recorder }).__walks;
  if (!found)
    throw new Error(
      "the product is not instrumented: run the walks with `npm run walks` (vitest.walks.config.ts)",
    );
  return found;
}

/**
 * What ran since `start()`: every product file whose code ran, with how many times code of it
 * started, resumed or got a call's return, and the files in that order (a repeat of the file
 * before left out).
 */
export interface Walked {
  files: Map<string, number>;
  trail: string[];
}

export function start(): void {
  const r = recorder();
  r.files = new Map();
  r.trail = [];
  r.on = true;
}

export function stop(): Walked {
  const r = recorder();
  r.on = false;
  return { files: new Map(r.files), trail: [...r.trail] };
}

/** Whether `value` is the recorder this test file writes to (compared from inside an object). */
export function isTheRecorder(value: unknown): boolean {
  return value === recorder();
}

/**
 * Resolves once no product code has run for `quietMs` (nothing started or resumed): whatever the
 * last request left running in the background (its own drive passes, deliveries) is done.
 */
export async function quiet(quietMs = 300, timeoutMs = 30_000): Promise<void> {
  const r = recorder();
  const deadline = performance.now() + timeoutMs;
  let seen = r.entries;
  let since = performance.now();
  while (performance.now() - since < quietMs) {
    if (performance.now() > deadline) throw new Error(`the isolate never became quiet for ${quietMs} ms`);
    await sleep(25);
    if (r.entries !== seen) {
      seen = r.entries;
      since = performance.now();
    }
  }
}

/**
 * A subscriber on a session's event stream (a WebSocket through the Worker's `fetch`). `until`
 * runs `then` in the very callback that receives the matching event, before anything else of the
 * isolate runs, so a walk stops at the moment its end reaches the subscriber.
 */
export class Subscriber {
  readonly events: WireEvent[] = [];
  #waiters: { match: (event: WireEvent) => boolean; resolve: (event: WireEvent) => void }[] = [];

  static async open(sessionId: string): Promise<Subscriber> {
    const response = await openStream(sessionId);
    expect(response.status).toBe(101);
    const socket = response.webSocket!;
    socket.accept();
    const subscriber = new Subscriber();
    socket.addEventListener("message", (message) => {
      if (typeof message.data !== "string") return;
      subscriber.#receive(JSON.parse(message.data) as WireEvent);
    });
    return subscriber;
  }

  #receive(event: WireEvent): void {
    this.events.push(event);
    for (const waiter of [...this.#waiters]) {
      if (!waiter.match(event)) continue;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(event);
    }
  }

  /** How many events arrived so far: a mark for `until`. */
  mark(): number {
    return this.events.length;
  }

  /**
   * The first event that `match`es among those from the mark `from` on (already arrived or still
   * to come); `then` runs as it arrives (at once for one that already did).
   */
  until<T>(
    from: number,
    match: (event: WireEvent) => boolean,
    then: (event: WireEvent) => T,
    timeoutMs = 30_000,
  ): Promise<T> {
    const arrived = this.events.slice(from).find(match);
    if (arrived) return Promise.resolve().then(() => then(arrived));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no matching event within ${timeoutMs} ms; seen: ${this.#types()}`)),
        timeoutMs,
      );
      this.#waiters.push({
        match,
        resolve: (event) => {
          clearTimeout(timer);
          try {
            resolve(then(event));
          } catch (error) {
            reject(error);
          }
        },
      });
    });
  }

  #types(): string {
    return this.events.map((e) => e.type).join(", ");
  }
}
