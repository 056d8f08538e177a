import { describe, expect, it } from "vitest";
import {
  DEFAULT_SCHEDULE_DELAY_MS,
  exportConfig,
  parseOtlpHeaders,
  scheduleDelayOf,
  tracesUrl,
} from "../../../src/trace/export-config";

describe("the exporter's settings from the OpenTelemetry variables (src/trace/export-config.ts)", () => {
  it("traces go to <endpoint>/v1/traces, a path of the endpoint kept", () => {
    expect(tracesUrl("https://collector.example.com:4318")).toBe(
      "https://collector.example.com:4318/v1/traces",
    );
    expect(tracesUrl("https://collector.example.com/")).toBe("https://collector.example.com/v1/traces");
    expect(tracesUrl("https://gateway.example.com/otlp/")).toBe("https://gateway.example.com/otlp/v1/traces");
    expect(tracesUrl("http://127.0.0.1:4318")).toBe("http://127.0.0.1:4318/v1/traces");
    expect(tracesUrl("ftp://collector.example.com")).toBeUndefined();
    expect(tracesUrl("collector:4318")).toBeUndefined();
  });

  it("no endpoint: off; an unusable one: off, saying why; otherwise the URL, the headers and the service name", () => {
    expect(exportConfig({ endpoint: undefined, headers: "a=b", serviceName: "x" })).toEqual({});
    expect(exportConfig({ endpoint: " ", headers: undefined, serviceName: undefined })).toEqual({});
    expect(
      exportConfig({ endpoint: "not a url", headers: undefined, serviceName: undefined }).problem,
    ).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(exportConfig({ endpoint: "https://c.example.com", headers: "k=v", serviceName: "" })).toEqual({
      config: {
        url: "https://c.example.com/v1/traces",
        headers: { k: "v" },
        serviceName: "subagents-edge",
        scheduleDelayMs: DEFAULT_SCHEDULE_DELAY_MS,
      },
    });
    expect(
      exportConfig({ endpoint: "https://c.example.com", headers: undefined, serviceName: "svc" }).config,
    ).toMatchObject({ headers: {}, serviceName: "svc" });
  });

  it("OTEL_BSP_SCHEDULE_DELAY: milliseconds a batch waits for more, the specification's 5000 by default", () => {
    expect(DEFAULT_SCHEDULE_DELAY_MS).toBe(5_000);
    expect(scheduleDelayOf(undefined)).toBe(5_000);
    expect(scheduleDelayOf("")).toBe(5_000);
    expect(scheduleDelayOf("0")).toBe(0);
    expect(scheduleDelayOf(" 250 ")).toBe(250);
    for (const bad of ["-1", "1.5", "soon", "1e3"]) expect(scheduleDelayOf(bad)).toBe(5_000);
    expect(scheduleDelayOf("999999999")).toBe(3_600_000);
    expect(
      exportConfig({
        endpoint: "https://c.example.com",
        headers: undefined,
        serviceName: undefined,
        scheduleDelay: "0",
      }).config?.scheduleDelayMs,
    ).toBe(0);
  });

  it("headers are key=value pairs, values percent-decoded, spaces around each part trimmed", () => {
    expect(
      parseOtlpHeaders("api-key=s3cr3t, Authorization = Basic%20dXNlcjpwYXNz ,x-tenant=a%2Cb%3Dc,x-eq=a=b"),
    ).toEqual({
      "api-key": "s3cr3t",
      authorization: "Basic dXNlcjpwYXNz",
      "x-tenant": "a,b=c",
      "x-eq": "a=b",
    });
    expect(parseOtlpHeaders(undefined)).toEqual({});
    expect(parseOtlpHeaders("")).toEqual({});
    expect(parseOtlpHeaders("x-empty=")).toEqual({ "x-empty": "" });
  });

  it("a malformed entry is skipped, the others kept", () => {
    expect(
      parseOtlpHeaders(
        [
          "no-equals",
          "=no-name",
          "bad name=1",
          "x-bad-escape=%E0%A4%A",
          "x-newline=a%0Ab",
          "x-wide=%E2%82%AC",
          "ok=1",
          ",",
          "also-ok=2",
        ].join(","),
      ),
    ).toEqual({ ok: "1", "also-ok": "2" });
  });
});
