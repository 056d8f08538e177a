import { type HttpServer, type IncomingMessage, nodeHttp, type ServerResponse } from "./node-http.ts";

/**
 * An OTLP/HTTP trace receiver for the export tests (test/workers/trace/export*.test.ts through
 * vitest's globalSetup, test/e2e/trace-export.test.mjs in-process). It runs in Node and decodes
 * every request with the official OTLP definitions: the OpenTelemetry protobuf messages
 * (`opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`) as OpenTelemetry JS
 * compiles them (`@opentelemetry/otlp-transformer`'s generated protobufjs code). OTLP/HTTP JSON
 * is the proto3 JSON mapping of those messages but for trace and span ids, which are hex instead
 * of base64: the ids are turned into bytes, the request is built with the message's `fromObject`
 * and checked with its `verify`, and its `toObject` must give back everything that was sent (a
 * field the definitions do not know would be lost there: the request is then not decodable).
 *
 * Two servers on loopback ports:
 *
 *   collector  POST /v1/traces   answers as the current mode says (below); records every request
 *   control    GET  /__exports?since=<n>  every recorded request from index n
 *              POST /__mode      {"mode", "status"?, "retryAfter"?, "times"?}: how the collector answers
 *              POST /__decode    an OTLP JSON body, decoded the same way -> {"ok", "request"?, "error"?}
 *
 * Modes: `ok` (200 `{}`), `fail` (`status`, default 503, with `Retry-After: <retryAfter>` when
 * given), `hang` (never answers; the request is still recorded), `refuse` (the collector's port is
 * closed: connections are refused; it listens on the same port again when the mode changes).
 * With `times`, `fail` and `hang` apply to that many requests, then the collector answers `ok`
 * again; with `session`, only to requests that carry a span of that session (`gen_ai.agent.id`).
 *
 * `node:http` and the generated code are loaded at run time and typed structurally (the project
 * has no Node types); this file runs in Node as is (it strips types and nothing else).
 */

export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
  [field: string]: unknown;
}

/** A request the collector got. */
export interface ReceivedExport {
  index: number;
  at: number;
  path: string;
  contentType: string;
  /** The request's headers (names in lower case). */
  headers: Record<string, string>;
  /** How it was answered: a status, or null while held (`hang`). */
  status: number | null;
  /** Whether it decoded with the official definitions; `error` says why not. */
  decoded: boolean;
  error?: string;
  /** The resource's `service.name`. */
  serviceName?: string;
  spans: DecodedSpan[];
  /** The body exactly as received. */
  body: string;
}

export type ReceiverMode =
  | { mode: "ok" }
  | { mode: "fail"; status?: number; retryAfter?: number; times?: number; session?: string }
  | { mode: "hang"; times?: number; session?: string }
  | { mode: "refuse" };

export interface OtlpReceiver {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT should be: `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** The control server: `http://127.0.0.1:<port>`. */
  control: string;
  received: ReceivedExport[];
  setMode(mode: ReceiverMode): Promise<void>;
  close(): Promise<void>;
}

export type DecodeResult = { ok: true; request: { resourceSpans: unknown[] } } | { ok: false; error: string };

/** The generated message type (protobufjs static code), as far as the decoding uses it. */
interface MessageType {
  fromObject(object: unknown): unknown;
  verify(message: unknown): string | null;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}

const GENERATED = "@opentelemetry/otlp-transformer/build/src/generated/root.js";
let requestType: Promise<MessageType> | undefined;

/** `ExportTraceServiceRequest` of the official definitions, loaded once. */
function exportTraceServiceRequest(): Promise<MessageType> {
  requestType ??= import(GENERATED).then((module: { default?: unknown }) => {
    const root = (module.default ?? module) as {
      opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: MessageType } } } } };
    };
    return root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  });
  return requestType;
}

/** The id fields of spans and their links, and their length in bytes. */
const ID_BYTES: Record<string, number> = { traceId: 16, spanId: 8, parentSpanId: 8 };

/** Applies `fn` to every span and span link of a request (JSON shape). */
function eachSpanLike(request: unknown, fn: (item: Record<string, unknown>) => void): void {
  const resourceSpans = (request as { resourceSpans?: unknown })?.resourceSpans;
  if (!Array.isArray(resourceSpans)) return;
  for (const resource of resourceSpans as { scopeSpans?: unknown }[])
    for (const scope of (Array.isArray(resource?.scopeSpans) ? resource.scopeSpans : []) as {
      spans?: unknown;
    }[])
      for (const span of (Array.isArray(scope?.spans) ? scope.spans : []) as Record<string, unknown>[]) {
        fn(span);
        for (const link of (Array.isArray(span.links) ? span.links : []) as Record<string, unknown>[])
          fn(link);
      }
}

function hexToBytes(hex: unknown, length: number, field: string): Uint8Array {
  if (typeof hex !== "string" || !new RegExp(`^[0-9a-f]{${length * 2}}$`).test(hex))
    throw new Error(`${field} is not ${length * 2} lowercase hex digits: ${JSON.stringify(hex)}`);
  return Uint8Array.from({ length }, (_, i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}

function base64ToHex(base64: string): string {
  return [...atob(base64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
}

/** The value without empty arrays and with its keys sorted (what a round trip may not change). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (Array.isArray(item) && item.length === 0) continue;
    out[key] = canonical(item);
  }
  return out;
}

/** Where two canonical values first differ (a path), for the error. */
function firstDifference(a: unknown, b: unknown, path = "$"): string | undefined {
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return path;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const found = firstDifference(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[key],
      `${path}.${key}`,
    );
    if (found) return found;
  }
  return path;
}

/** Decodes an OTLP/HTTP JSON trace request with the official definitions (see above). */
export async function decodeOtlpJson(text: string): Promise<DecodeResult> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `not JSON: ${(error as Error).message}` };
  }
  const Request = await exportTraceServiceRequest();
  try {
    const withBytes = structuredClone(json);
    eachSpanLike(withBytes, (item) => {
      for (const [field, length] of Object.entries(ID_BYTES))
        if (item[field] !== undefined) item[field] = hexToBytes(item[field], length, field);
    });
    const message = Request.fromObject(withBytes);
    const problem = Request.verify(message);
    if (problem) return { ok: false, error: `not a valid ExportTraceServiceRequest: ${problem}` };
    const back = Request.toObject(message, { longs: String, enums: Number, bytes: String });
    eachSpanLike(back, (item) => {
      for (const field of Object.keys(ID_BYTES))
        if (typeof item[field] === "string") item[field] = base64ToHex(item[field] as string);
    });
    const lost = firstDifference(canonical(json), canonical(back));
    if (lost) return { ok: false, error: `the definitions do not read it as sent, at ${lost}` };
    return { ok: true, request: back as { resourceSpans: unknown[] } };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** The spans of a decoded request, each resource's `service.name` beside them. */
export function spansOfRequest(request: { resourceSpans: unknown[] }): {
  serviceName: string | undefined;
  spans: DecodedSpan[];
} {
  let serviceName: string | undefined;
  const spans: DecodedSpan[] = [];
  for (const resource of request.resourceSpans as {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: DecodedSpan[] }[];
  }[]) {
    serviceName ??= resource.resource?.attributes?.find((a) => a.key === "service.name")?.value.stringValue;
    for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
  }
  return { serviceName, spans };
}

/** A span's `gen_ai.agent.id`: the session it is of. */
export function agentOf(span: DecodedSpan): string | undefined {
  const value = span.attributes.find((a) => a.key === "gen_ai.agent.id")?.value;
  return typeof value?.stringValue === "string" ? value.stringValue : undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(new TextDecoder().decode(concat(chunks))));
    req.on("error", reject);
  });
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}

const HOST = "127.0.0.1";

function listen(server: HttpServer, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(port, HOST, () => {
      const address = server.address();
      if (address === null || typeof address === "string") reject(new Error("no TCP port"));
      else resolve(address.port);
    });
  });
}

function shut(server: HttpServer): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const http = await nodeHttp();
  const received: ReceivedExport[] = [];
  let mode: ReceiverMode = { mode: "ok" };
  let left: number | undefined;

  /** The mode for a request with these spans (a mode given `times` runs out, then `ok`). */
  const take = (spans: readonly DecodedSpan[]): ReceiverMode => {
    const current = mode;
    if (current.mode === "ok" || current.mode === "refuse") return current;
    if (current.session !== undefined && !spans.some((span) => agentOf(span) === current.session))
      return { mode: "ok" };
    if (left !== undefined) {
      left -= 1;
      if (left <= 0) {
        mode = { mode: "ok" };
        left = undefined;
      }
    }
    return current;
  };

  const collectorHandler = (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const body = await readBody(req);
      const headers = headersOf(req);
      const record: ReceivedExport = {
        index: received.length,
        at: Date.now(),
        path: req.url ?? "",
        contentType: headers["content-type"] ?? "",
        headers,
        status: null,
        decoded: false,
        spans: [],
        body,
      };
      received.push(record);
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        record.status = 404;
        sendJson(res, 404, { error: "not found" });
        return;
      }
      const result = await decodeOtlpJson(body);
      if (result.ok) {
        record.decoded = true;
        const { serviceName, spans } = spansOfRequest(result.request);
        record.spans = spans;
        if (serviceName !== undefined) record.serviceName = serviceName;
      } else record.error = result.error;
      const now = take(record.spans);
      if (now.mode === "hang") return; // held until the client gives up or the server closes
      if (now.mode === "fail") {
        record.status = now.status ?? 503;
        const retry: Record<string, string> =
          now.retryAfter === undefined ? {} : { "retry-after": String(now.retryAfter) };
        sendJson(res, record.status, { code: 14, message: "unavailable (on purpose)" }, retry);
        return;
      }
      record.status = 200;
      sendJson(res, 200, {});
    })();
  };

  let collector = http.createServer(collectorHandler);
  const port = await listen(collector, 0);
  let refusing = false;

  const setMode = async (next: ReceiverMode): Promise<void> => {
    mode = next;
    left = next.mode === "fail" || next.mode === "hang" ? next.times : undefined;
    if (next.mode === "refuse" && !refusing) {
      refusing = true;
      await shut(collector);
    } else if (next.mode !== "refuse" && refusing) {
      collector = http.createServer(collectorHandler);
      await listen(collector, port);
      refusing = false;
    }
  };

  const control = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", `http://${HOST}`);
      const body = await readBody(req);
      if (req.method === "GET" && url.pathname === "/__exports") {
        const since = Number(url.searchParams.get("since") ?? 0);
        sendJson(res, 200, { exports: received.slice(since) });
        return;
      }
      if (req.method === "POST" && url.pathname === "/__mode") {
        await setMode(JSON.parse(body) as ReceiverMode);
        sendJson(res, 200, { mode });
        return;
      }
      if (req.method === "POST" && url.pathname === "/__decode") {
        sendJson(res, 200, await decodeOtlpJson(body));
        return;
      }
      sendJson(res, 404, { error: "not found" });
    })().catch((error: unknown) => sendJson(res, 500, { error: String(error) }));
  });
  const controlPort = await listen(control, 0);

  return {
    endpoint: `http://${HOST}:${port}`,
    control: `http://${HOST}:${controlPort}`,
    received,
    setMode,
    close: async () => {
      if (!refusing) await shut(collector);
      await shut(control);
    },
  };
}

/** What `globalSetup` provides; the pool options in vitest.config.ts `inject` it into bindings. */
export interface OtlpReceiverContext {
  endpoint: string;
  control: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    otlpReceiver: OtlpReceiverContext;
  }
}

/** vitest `globalSetup`: starts the receiver and provides its addresses; stops it when the run ends. */
export default async function setup(project: {
  provide(key: "otlpReceiver", value: OtlpReceiverContext): void;
}): Promise<() => Promise<void>> {
  const receiver = await startOtlpReceiver();
  project.provide("otlpReceiver", { endpoint: receiver.endpoint, control: receiver.control });
  return () => receiver.close();
}
