import { describe, expect, it } from "vitest";
import { createSession, sendMessage } from "../../support/api";
import { quiet, waitForTurnEnds } from "../../support/logs";
import { alarmOf, sqlRows } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

describe("without OTEL_EXPORTER_OTLP_ENDPOINT (README 'Traces')", () => {
  it("a session's turns leave no export state and no alarm behind", async () => {
    const { id } = await createSession();
    await sendMessage(id, script({ call: [toolCall("echo", { text: "x" })] }, { say: "done" }));
    await waitForTurnEnds(id, 1);
    await quiet(id);
    expect(await sqlRows(id, "SELECT name FROM flags WHERE name LIKE 'trace:%'")).toEqual([]);
    expect(await alarmOf(id)).toBeNull();
  });
});
