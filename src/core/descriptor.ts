import type { ToolFilter } from "../agent/tools";

/**
 * The durable descriptor (`subagent/descriptor` event): how a child was established. One-shot:
 * {version, mode, provider, label?}; continuable: {version, mode, provider, label, agentProvider?,
 * agentModel?, persona?, toolFilter?}. Optional keys are absent, never undefined.
 */

export const DESCRIPTOR_VERSION = 2;

export type Descriptor =
  | { version: 2; mode: "one-shot"; provider: string; label?: string }
  | {
      version: 2;
      mode: "continuable";
      provider: string;
      label: string;
      agentProvider?: string;
      agentModel?: string;
      persona?: string;
      toolFilter?: ToolFilter;
    };

export function oneShotDescriptor(provider: string, label?: string): Descriptor {
  return label === undefined
    ? { version: DESCRIPTOR_VERSION, mode: "one-shot", provider }
    : { version: DESCRIPTOR_VERSION, mode: "one-shot", provider, label };
}

const ONE_SHOT_KEYS = new Set(["version", "mode", "provider", "label"]);
const CONTINUABLE_KEYS = new Set([
  "version",
  "mode",
  "provider",
  "label",
  "agentProvider",
  "agentModel",
  "persona",
  "toolFilter",
]);

/**
 * Reads the FIRST descriptor of a slice of events: undefined when there is none or it has another
 * version; throws for a malformed current-version payload.
 */
export function foldDescriptor(payloads: readonly unknown[]): Descriptor | undefined {
  const first = payloads[0];
  if (first === undefined) return undefined;
  if (typeof first !== "object" || first === null || Array.isArray(first))
    throw new Error("descriptor is not an object");
  const d = first as Record<string, unknown>;
  if (typeof d.version !== "number") throw new Error("descriptor version is not a number");
  if (d.version !== DESCRIPTOR_VERSION) return undefined;
  if (d.mode !== "one-shot" && d.mode !== "continuable") throw new Error("descriptor mode is invalid");
  const allowed = d.mode === "one-shot" ? ONE_SHOT_KEYS : CONTINUABLE_KEYS;
  for (const key of Object.keys(d))
    if (!allowed.has(key)) throw new Error(`descriptor has unknown field ${key}`);
  for (const key of ["provider", "label", "agentProvider", "agentModel", "persona"]) {
    if (key in d && typeof d[key] !== "string") throw new Error(`descriptor ${key} is not a string`);
  }
  if (typeof d.provider !== "string") throw new Error("descriptor provider is missing");
  if (d.mode === "continuable" && typeof d.label !== "string")
    throw new Error("continuable descriptor needs a label");
  if ("toolFilter" in d) checkToolFilter(d.toolFilter);
  return d as unknown as Descriptor;
}

function checkToolFilter(value: unknown): void {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error("toolFilter is not an object");
  const f = value as Record<string, unknown>;
  const keys = Object.keys(f);
  if (keys.length === 0) throw new Error("toolFilter is empty");
  for (const key of keys) {
    if (key !== "allow" && key !== "deny") throw new Error(`toolFilter has unknown key ${key}`);
    const list = f[key];
    if (!Array.isArray(list) || list.some((n) => typeof n !== "string"))
      throw new Error(`toolFilter ${key} is not a string array`);
  }
}
