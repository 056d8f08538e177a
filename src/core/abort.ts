/**
 * `work`, or a rejection with the signal's reason once it aborts, whichever comes first. Work
 * that ignores its signal (a user's tool or model client) is left behind: its late answer is
 * dropped, and the caller goes on.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // the work left behind may still fail (it saw the same abort): that is not an unhandled rejection
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
