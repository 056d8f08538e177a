import { describe, expect, it } from "vitest";
import * as R from "../../../src/contract/responses";
import { CreateSessionBody } from "../../../src/contract/wire";
import { buildRouter } from "../../../src/http/app";
import type { Deployment } from "../../../src/platform/deployment";
import { api, createSession, sendMessage, startRun, waitForRun } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";
import { z } from "zod";

/**
 * The OpenAPI 3.1 document (GET /v1/openapi.json): generated from the zod schemas that validate
 * the requests, listing every route the router serves, and describing answers the API really gives.
 */

async function documentOf(): Promise<any> {
  const res = await api("GET", "/v1/openapi.json", { token: null });
  expect(res.status).toBe(200);
  return res.body;
}

describe("the OpenAPI document", () => {
  it("lists every route the router serves, with the error envelope on every operation", async () => {
    const doc = await documentOf();
    expect(doc.openapi).toBe("3.1.0");
    // the router's own table: [method, pattern, handlers, path]
    const router = buildRouter({ protocols: {} } as Deployment) as unknown as {
      routes: [string, RegExp, unknown[], string][];
    };
    const served = router.routes
      .map(([method, , , path]) => ({ method: method.toLowerCase(), path: path.replace(/:(\w+)/g, "{$1}") }))
      .filter((r) => r.path !== "*" && r.path !== "/v1/*");
    expect(served.length).toBeGreaterThan(20);
    const missing = served.filter(({ method, path }) => {
      const operations = doc.paths[path];
      if (!operations) return true;
      // a route for every method (MCP's endpoint) is documented by its POST
      return method === "all" ? !operations.post : !operations[method];
    });
    expect(missing).toEqual([]);
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        expect(operation.responses["400"].content["application/json"].schema, `${method} ${path}`).toEqual({
          $ref: "#/components/schemas/ErrorEnvelope",
        });
        expect(
          Object.keys(operation.responses).some((s) => s.startsWith("2")),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
  });

  it("describes request bodies with the JSON schema of the zod schemas that validate them", async () => {
    const doc = await documentOf();
    const schema = doc.paths["/v1/sessions"].post.requestBody.content["application/json"].schema;
    const { $schema: _dialect, ...expected } = z.toJSONSchema(CreateSessionBody, {
      io: "input",
      unrepresentable: "any",
    }) as Record<string, unknown>;
    expect(schema).toEqual(expected);
    expect(schema.additionalProperties).toBe(false); // strict: unknown fields are refused
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(["model", "temperature", "budget", "mcpServers", "toolFilter"]),
    );
    const events = doc.paths["/v1/sessions/{id}/events"].get.parameters.map(
      (p: { name: string; in: string }) => `${p.in}:${p.name}`,
    );
    expect(events).toEqual(["path:id", "query:after", "query:limit"]);
    expect(doc.paths["/v1/health"].get.security).toEqual([]);
    expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
  });

  it("describes answers the API really gives", async () => {
    const created = await api("POST", "/v1/sessions", { body: { label: "openapi" } });
    expect(R.CreatedSession.safeParse(created.body).success).toBe(true);
    const { id } = created.body;
    await sendMessage(id, "hello");
    await waitForTurnEnds(id, 1);
    expect(R.SessionView.safeParse((await api("GET", `/v1/sessions/${id}`)).body).error).toBeUndefined();
    expect(R.EventPage.safeParse((await api("GET", `/v1/sessions/${id}/events`)).body).error).toBeUndefined();
    expect(R.ProviderList.safeParse((await api("GET", "/v1/providers")).body).error).toBeUndefined();
    expect(R.DirectoryPage.safeParse((await api("GET", "/v1/sessions")).body).error).toBeUndefined();
    const started = await startRun(id, { prompt: "child" });
    expect(R.StartedRun.safeParse(started.body).error).toBeUndefined();
    await waitForRun(id, started.body.runId);
    expect(
      R.RunView.safeParse((await api("GET", `/v1/sessions/${id}/runs/${started.body.runId}`)).body).error,
    ).toBeUndefined();
    expect(
      R.ChildListing.safeParse((await api("GET", `/v1/sessions/${id}/children`)).body).error,
    ).toBeUndefined();
    expect(
      R.DescendantListing.safeParse((await api("GET", `/v1/sessions/${id}/descendants`)).body).error,
    ).toBeUndefined();
    expect(
      R.OutboxPage.safeParse((await api("GET", `/v1/sessions/${id}/outbox`)).body).error,
    ).toBeUndefined();
    const other = await createSession();
    const refused = await api("GET", `/v1/sessions/${id}`, { token: other.token });
    expect(R.ErrorEnvelope.safeParse(refused.body).error).toBeUndefined();
  });
});
