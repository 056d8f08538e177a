import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";

/**
 * Issue 23: a 10,000-character runId came back whole in the error message. Caller input in a
 * message is quoted and cut to 64 characters (src/core/quote.ts).
 */
describe("error messages quote caller input shortened", () => {
  it("answers a 10,000-character runId with a short message that still names its start", async () => {
    const { id } = await createSession();
    const runId = `r${"x".repeat(9_999)}`;
    const res = await api("GET", `/v1/sessions/${id}/runs/${runId}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    const { message } = res.body.error as { message: string };
    expect(message.length).toBeLessThan(120);
    expect(message).toBe(`no run "r${"x".repeat(63)}…" (10000 characters)`);
  });

  it("keeps a short runId whole, quoted", async () => {
    const { id } = await createSession();
    const res = await api("GET", `/v1/sessions/${id}/runs/run-1`);
    expect(res.body.error.message).toBe('no run "run-1"');
  });
});
