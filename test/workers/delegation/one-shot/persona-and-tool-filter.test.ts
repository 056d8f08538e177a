import { describe, expect, it } from "vitest";
import {
  createSession,
  expectError,
  expectNoSession,
  sendMessage,
  startOneShot,
  startRun,
  waitForRun,
} from "../../../support/api";
import { fakeRequestsMentioning, toolNames } from "../../../support/fake-openai";
import { reservedId } from "../../../support/ids";
import { allEvents, ofType, waitForTurnEnds } from "../../../support/logs";
import { sqlRows } from "../../../support/objects";
import { script } from "../../../support/scripts";

/**
 * A child's own persona and tool filter (semantics.md §1.1, §2.3), seen in the requests the fake
 * OpenAI-compatible server recorded: the child gets only those its start names.
 */

describe("a child's persona and tool filter (semantics.md §1.1, §2.3)", () => {
  it("a per-child persona reaches the child's system prompt and not the parent's; a denied tool is absent from the child's tools and fails as unknown when called; an unknown filter name refuses the start with no child", async () => {
    const tag = crypto.randomUUID();
    const parentPersona = `parent persona ${tag}`;
    const childPersona = `child persona ${tag}`;
    const parent = await createSession({ model: "openai:fake-model", persona: parentPersona });
    await sendMessage(parent.id, `parent probe ${tag}`);
    await waitForTurnEnds(parent.id, 1);
    const child = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: `child probe ${tag}`,
      model: "openai:fake-model",
      persona: childPersona,
      toolFilter: { deny: ["echo"] },
    });
    expect((await waitForRun(parent.id, child.runId)).result.output).toEqual([
      { type: "text", text: `hello from fake: child probe ${tag}` },
    ]);
    const allowOnly = await startOneShot(parent.id, {
      provider: "spawn",
      prompt: `allow probe ${tag}`,
      model: "openai:fake-model",
      toolFilter: { allow: ["echo"] },
    });
    await waitForRun(parent.id, allowOnly.runId);

    const [parentRequest] = await fakeRequestsMentioning(`parent probe ${tag}`);
    const [childRequest] = await fakeRequestsMentioning(`child probe ${tag}`);
    const [allowRequest] = await fakeRequestsMentioning(`allow probe ${tag}`);
    expect(parentRequest!.body.messages[0]).toEqual({ role: "system", content: parentPersona });
    expect(JSON.stringify(parentRequest!.body)).not.toContain(childPersona);
    expect(childRequest!.body.messages[0]).toEqual({ role: "system", content: childPersona });
    expect(JSON.stringify(childRequest!.body)).not.toContain(parentPersona);
    expect(toolNames(parentRequest!)).toContain("echo");
    expect(toolNames(childRequest!)).not.toContain("echo");
    expect(toolNames(childRequest!)).toContain("subagent");
    expect(toolNames(allowRequest!)).toEqual(["echo"]);

    // calling the denied tool is an unknown-tool error result, and the turn goes on
    const scripted = await createSession();
    const denied = await startOneShot(scripted.id, {
      provider: "spawn",
      prompt: script({ call: [{ tool: "echo", args: { text: "hidden" } }] }, { say: "went on" }),
      toolFilter: { deny: ["echo"] },
    });
    expect((await waitForRun(scripted.id, denied.runId)).result.output).toEqual([
      { type: "text", text: "went on" },
    ]);
    const deniedResult = ofType(await allEvents(denied.id), "tool/result")[0]!.data;
    expect(deniedResult).toMatchObject({ name: "echo", isError: true });
    expect(deniedResult.content[0].text).toMatch(/unknown tool "echo"/);

    // an unknown tool name in the filter refuses the start loudly, with no orphaned child
    const orphan = crypto.randomUUID();
    const refused = await startRun(scripted.id, {
      provider: "spawn",
      prompt: "x",
      childId: orphan,
      toolFilter: { allow: ["echo", "no_such_tool"] },
    });
    expectError(refused, 400, "INVALID_REQUEST");
    expect(refused.body.error.message).toContain("no_such_tool");
    await expectNoSession(reservedId(scripted.id, orphan));
    expect((await sqlRows(scripted.id, "SELECT child_id FROM children")).map((r) => r.child_id)).toEqual([
      denied.id,
    ]);
  });
});
