import { DEFAULT_SERVICE_NAME } from "./otlp";

/**
 * The exporter's settings from the deployment's OpenTelemetry variables (README "Traces",
 * export), read as the OpenTelemetry specification defines them:
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL; traces go to `<base>/v1/traces`
 *   (a path of the base is kept, a trailing `/` is not doubled). Unset or empty: no export. Not
 *   an http(s) URL: no export either (one line in the log says why).
 * - `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,key=value`, values percent-decoded; an entry that
 *   is not a valid header (no `=`, an empty or invalid name, bad percent-encoding, a control
 *   character or one a header cannot carry) is skipped, never an error.
 * - `OTEL_SERVICE_NAME`: the resource's `service.name` (empty: `subagents-edge`).
 * - `OTEL_BSP_SCHEDULE_DELAY`: milliseconds a finished span waits before its batch goes out, so
 *   a busy session sends one request for many turns rather than one per turn (the batch span
 *   processor's delay in the specification, and its default: 5000); `0`: each turn as it ends.
 */

/** OTEL_BSP_SCHEDULE_DELAY when it is not set (or not a non-negative integer): the specification's default. */
export const DEFAULT_SCHEDULE_DELAY_MS = 5_000;

export interface ExportVars {
  endpoint: string | undefined;
  headers: string | undefined;
  serviceName: string | undefined;
  scheduleDelay?: string | undefined;
}

export interface ExportConfig {
  /** Where batches are posted: `<endpoint>/v1/traces`. */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  /** How long the first finished span of a batch waits for others before the batch is sent. */
  scheduleDelayMs: number;
}

/** The settings, or undefined when export is off (or the endpoint is unusable: `problem` says why). */
export function exportConfig(vars: ExportVars): { config?: ExportConfig; problem?: string } {
  const endpoint = vars.endpoint?.trim();
  if (!endpoint) return {};
  const url = tracesUrl(endpoint);
  if (url === undefined)
    return { problem: "OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL: no span is exported" };
  return {
    config: {
      url,
      headers: parseOtlpHeaders(vars.headers),
      serviceName: vars.serviceName || DEFAULT_SERVICE_NAME,
      scheduleDelayMs: scheduleDelayOf(vars.scheduleDelay),
    },
  };
}

/** OTEL_BSP_SCHEDULE_DELAY in ms: a non-negative integer (at most an hour), else the default. */
export function scheduleDelayOf(raw: string | undefined): number {
  const text = raw?.trim() ?? "";
  if (!/^\d+$/.test(text)) return DEFAULT_SCHEDULE_DELAY_MS;
  return Math.min(Number(text), 3_600_000);
}

/** `<endpoint>/v1/traces` for an http(s) base URL. */
export function tracesUrl(endpoint: string): string | undefined {
  if (!URL.canParse(endpoint)) return undefined;
  const url = new URL(endpoint);
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`;
  return url.href;
}

/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value the platform sends as it is: tabs and visible bytes, no control character. */
const VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;

/** `OTEL_EXPORTER_OTLP_HEADERS` as headers; malformed entries are left out. */
export function parseOtlpHeaders(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of (raw ?? "").split(",")) {
    const equals = entry.indexOf("=");
    if (equals < 0) continue;
    const name = decoded(entry.slice(0, equals).trim());
    const value = decoded(entry.slice(equals + 1).trim());
    if (name === undefined || value === undefined || !TOKEN.test(name) || !VALUE.test(value)) continue;
    headers[name.toLowerCase()] = value.trim();
  }
  return headers;
}

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined; // malformed percent-encoding
  }
}
