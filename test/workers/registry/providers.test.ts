import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  providerNames,
  putProvider,
  startOneShot,
  startRun,
  uniqueName,
  view,
  waitForRun,
} from "../../support/api";
import { lifecycleEvents, ofType, registryEvents, subscribe, waitForEvents } from "../../support/logs";
import { sqlRows } from "../../support/objects";
import { script } from "../../support/scripts";

/**
 * The provider registry (semantics.md §4): registration order, `provider-added` / `-removed` in
 * its log, taken names, and removal that only blocks new starts. Provider names are global to this
 * file's storage, so every test registers its own unique names.
 */

const CAPABILITIES_NONE = { outputSchema: false, depthLimit: false, toolFilter: false, persona: false };
const CAPABILITIES_ALL = { outputSchema: true, depthLimit: true, toolFilter: true, persona: true };

describe("the provider registry (semantics.md §4)", () => {
  it("registering a provider lists it with its description, records provider-added once, and deleting it records provider-removed with the name and unlists it", async () => {
    const name = uniqueName("reg");
    const before = await providerNames();
    expect(before.slice(0, 2)).toEqual(["spawn", "fork"]);

    const put = await putProvider(name, {
      kind: "remote",
      url: "https://example.com",
      token: "s3cret-token",
    });
    expect(put.status).toBe(201);
    const info = {
      name,
      kind: "remote",
      capabilities: CAPABILITIES_NONE,
      inheritsParentContext: false,
      continuable: false,
      local: false,
      // the deployment admin sees where it lives and who may use it (default: its own tenant)
      url: "https://example.com",
      tenants: ["default"],
    };
    expect(put.body).toEqual(info); // the transport token is never echoed

    const listed = await api("GET", "/v1/providers");
    const names = listed.body.providers.map((p: any) => p.name);
    expect(names.at(-1)).toBe(name); // registration order: the newest is last
    expect(names.filter((n: string) => n === name)).toHaveLength(1);
    expect(listed.body.providers.find((p: any) => p.name === name)).toEqual(info);
    expect(JSON.stringify(listed.body)).not.toContain("s3cret-token");

    const mine = (await registryEvents()).filter((e) => e.data.name === name);
    expect(mine.map((e) => e.type)).toEqual(["subagent/provider-added"]);
    expect(mine[0]!.data).toEqual({ name, provider: info });

    const removed = await api("DELETE", `/v1/providers/${name}`);
    expect(removed.status).toBe(204);
    expect(await providerNames()).not.toContain(name);
    const after = (await registryEvents()).filter((e) => e.data.name === name);
    expect(after.map((e) => e.type)).toEqual(["subagent/provider-added", "subagent/provider-removed"]);
    expect(after[1]!.data).toEqual({ name, tenants: ["default"] });
    expect(after[1]!.seq).toBeGreaterThan(after[0]!.seq);

    // removing it again: nothing to remove, nothing recorded
    expectError(await api("DELETE", `/v1/providers/${name}`), 404, "NO_PROVIDER");
    expect((await registryEvents()).filter((e) => e.data.name === name)).toHaveLength(2);
    // the defaults are untouched
    expect((await providerNames()).slice(0, 2)).toEqual(["spawn", "fork"]);
    // the name is free again: registering it anew lists it last and records a second provider-added
    expect((await putProvider(name, { kind: "remote", url: "https://again.example.com" })).status).toBe(201);
    expect((await providerNames()).at(-1)).toBe(name);
    expect((await registryEvents()).filter((e) => e.data.name === name).map((e) => e.type)).toEqual([
      "subagent/provider-added",
      "subagent/provider-removed",
      "subagent/provider-added",
    ]);
  });

  it("registering a taken name answers 409 DUPLICATE_PROVIDER and leaves the first registration untouched, also when two registrations race", async () => {
    const name = uniqueName("dup");
    expect((await putProvider(name, { kind: "remote", url: "https://first.example.com" })).status).toBe(201);
    expectError(
      await putProvider(name, { kind: "remote", url: "https://second.example.com" }),
      409,
      "DUPLICATE_PROVIDER",
    );
    expectError(await putProvider(name, { kind: "spawn" }), 409, "DUPLICATE_PROVIDER");
    expectError(
      await putProvider("spawn", { kind: "remote", url: "https://x.example.com" }),
      409,
      "DUPLICATE_PROVIDER",
    );

    const listed = (await api("GET", "/v1/providers")).body.providers;
    expect(listed.filter((p: any) => p.name === name)).toEqual([
      expect.objectContaining({ name, kind: "remote", url: "https://first.example.com" }),
    ]);
    expect(listed.filter((p: any) => p.name === "spawn")).toEqual([
      expect.objectContaining({ kind: "spawn", local: true, capabilities: CAPABILITIES_ALL }),
    ]);
    expect((await registryEvents()).filter((e) => e.data.name === name)).toHaveLength(1);

    // two registrations of a fresh name that interleave: exactly one wins
    const raced = uniqueName("race");
    const answers = await Promise.all([
      putProvider(raced, { kind: "remote", url: "https://a.example.com" }),
      putProvider(raced, { kind: "remote", url: "https://b.example.com" }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const winner = answers.find((a) => a.status === 201)!.body.url;
    const entries = (await api("GET", "/v1/providers")).body.providers.filter((p: any) => p.name === raced);
    expect(entries).toEqual([expect.objectContaining({ url: winner })]);
    expect((await registryEvents()).filter((e) => e.data.name === raced)).toHaveLength(1);
  });

  it("a stream subscriber that fails while a provider is registered and used neither undoes the registration nor affects the run or a healthy subscriber", async () => {
    const parent = await createSession();
    const failing = await subscribe(parent.id);
    failing.socket.addEventListener("message", () => failing.socket.close(1011, "subscriber failed"));
    const healthy = await subscribe(parent.id);

    const name = uniqueName("sub");
    const put = await putProvider(name, { kind: "spawn" });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ name, kind: "spawn", local: true, capabilities: CAPABILITIES_ALL });
    expect(await providerNames()).toContain(name);

    const started = await startRun(parent.id, {
      provider: name,
      prompt: script({ think: 200 }, { say: "ok" }),
    });
    expect(started.status).toBe(201);
    const run = await waitForRun(parent.id, started.body.runId);
    expect(run.result).toEqual({ output: [{ type: "text", text: "ok" }], stopReason: "completed" });
    expect(run.provider).toBe(name);

    const log = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    await healthy.waitFor((es) => es.length >= log.length);
    expect(healthy.received).toEqual(log);
    expect(lifecycleEvents(log).map((e) => [e.type, e.data.provider])).toEqual([
      ["subagent/start", name],
      ["subagent/end", name],
    ]);
    // the failing subscriber saw at most the first event before it hung up
    expect(failing.received.length).toBeLessThanOrEqual(1);
    // the registration stands, recorded once
    expect(await providerNames()).toContain(name);
    expect((await registryEvents()).filter((e) => e.data.name === name).map((e) => e.type)).toEqual([
      "subagent/provider-added",
    ]);
    healthy.socket.close(1000, "done");
  });

  it("deleting a provider does not revoke runs it already returned: a running child still settles, another stays until its holder disposes it, and new starts are refused", async () => {
    const name = uniqueName("unload");
    expect((await api("PUT", `/v1/providers/${name}`, { body: { kind: "spawn" } })).status).toBe(201);
    const parent = await createSession();
    const finishing = await startOneShot(parent.id, {
      provider: name,
      prompt: script({ think: 600 }, { say: "survived" }),
    });
    const hanging = await startOneShot(parent.id, {
      provider: name,
      prompt: script({ think: 30_000 }, { say: "late" }),
    });
    await waitForEvents(hanging.id, (es) => ofType(es, "turn/start").length === 1);

    expect((await api("DELETE", `/v1/providers/${name}`)).status).toBe(204);
    const refused = await startRun(parent.id, { provider: name, prompt: "x" });
    expectError(refused, 404, "NO_PROVIDER");

    expect((await waitForRun(parent.id, finishing.runId)).result).toEqual({
      output: [{ type: "text", text: "survived" }],
      stopReason: "completed",
    });
    // the other child is still running, owned, and named by its provider
    const stillRunning = await api("GET", `/v1/sessions/${parent.id}/runs/${hanging.runId}?wait=300`);
    expect(stillRunning.body).toMatchObject({ state: "running", provider: name });
    expect((await view(hanging.id)).status).toBe("running");
    expect(await sqlRows(parent.id, "SELECT state FROM children WHERE child_id = ?", hanging.id)).toEqual([
      { state: "owned" },
    ]);

    expect((await api("DELETE", `/v1/sessions/${parent.id}/runs/${hanging.runId}`)).status).toBe(202);
    expect((await waitForRun(parent.id, hanging.runId)).result).toMatchObject({
      output: [],
      stopReason: "aborted",
    });
    const log = await waitForEvents(parent.id, (es) => ofType(es, "subagent/end").length === 2);
    expect(ofType(log, "subagent/end").map((e) => [e.data.provider, e.data.stopReason])).toEqual([
      [name, "completed"],
      [name, "aborted"],
    ]);
    expect(await sqlRows(parent.id, "SELECT state FROM children WHERE child_id = ?", hanging.id)).toEqual([
      { state: "released" },
    ]);
  });
});
