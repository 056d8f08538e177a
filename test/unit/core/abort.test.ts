import { describe, expect, it } from "vitest";
import { untilAborted } from "../../../src/core/abort";

describe("untilAborted", () => {
  it("answers with the work, or with the abort, whichever comes first, and leaves no rejection unhandled", async () => {
    expect(await untilAborted(Promise.resolve(7), new AbortController().signal)).toBe(7);
    const controller = new AbortController();
    const pending = untilAborted(new Promise<number>(() => {}), controller.signal);
    controller.abort(new Error("interrupted"));
    await expect(pending).rejects.toThrow("interrupted");

    // already aborted, and the work fails as well (it saw the same abort): only the abort is reported
    const unhandled: unknown[] = [];
    const onUnhandled = (event: PromiseRejectionEvent): void => {
      unhandled.push(event.reason);
      event.preventDefault();
    };
    addEventListener("unhandledrejection", onUnhandled);
    try {
      const aborted = AbortSignal.abort(new Error("interrupted (parent)"));
      const failing = Promise.reject(new Error("the work failed too"));
      await expect(untilAborted(failing, aborted)).rejects.toThrow("interrupted (parent)");
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      removeEventListener("unhandledrejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });
});
