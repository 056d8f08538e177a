import * as z from "zod";
import * as R from "../contract/responses";
import type { Auth, Route } from "./route";

/**
 * The OpenAPI 3.1 document of the HTTP API (`GET /v1/openapi.json`), generated from the routes'
 * own declarations (route.ts: each says what it takes and answers where it is served) and the
 * zod schemas that validate the requests (and the response schemas of contract/responses.ts),
 * with zod's own JSON Schema conversion; nothing here is a hand-written schema, and no route can
 * be served undocumented (the OpenAPI test compares them).
 */

const AUTH_TEXT: Record<Auth, string> = {
  none: "no token",
  admin: "an admin token (the deployment's or a tenant's)",
  deployment: "the deployment's admin token",
  session: "the session's token, one of an ancestor, or an admin token",
  any: "any valid token",
  signed: "an HMAC signature of the body (remote delegation callbacks)",
};

/** The error answers every route may give (the envelope, with the statuses of docs/api.md). */
const ERROR_STATUSES = ["400", "401", "403", "404", "409", "413", "422", "429", "500", "503"];

function schemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    target: "draft-2020-12",
  }) as Record<string, unknown>;
  return json;
}

function queryParameters(schema: z.ZodType): unknown[] {
  const json = schemaOf(schema, "input") as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: "query",
    required: json.required?.includes(name) ?? false,
    schema: property,
  }));
}

/** The document of `routes` (their own declarations), for a deployment whose API lives under `base`. */
export function openApiDocument(
  base: string,
  version: string,
  routes: readonly Route[],
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const [status, description, body] = route.ok;
    const success: Record<string, unknown> = { description };
    if (body) success.content = { "application/json": { schema: schemaOf(body, "output") } };
    else if (route.raw) success.content = Object.fromEntries(route.raw.map((type) => [type, {}]));
    const responses: Record<string, unknown> = { [String(status)]: success };
    for (const code of ERROR_STATUSES) {
      responses[code] = {
        description: "the error envelope",
        content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
      };
    }
    paths[`${base}${route.path}`] ??= {};
    paths[`${base}${route.path}`]![route.method] = {
      summary: route.summary,
      description: `Authorization: ${AUTH_TEXT[route.auth]}.`,
      ...(route.auth === "none" || route.auth === "signed" ? { security: [] } : {}),
      parameters: [...params, ...(route.query ? queryParameters(route.query) : [])],
      ...(route.body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: schemaOf(route.body, "input") } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "subagents-edge",
      version,
      description: "Durable subagent delegation on Cloudflare Workers and Durable Objects (docs/api.md).",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { ErrorEnvelope: schemaOf(R.ErrorEnvelope, "output") },
    },
    paths,
  };
}
