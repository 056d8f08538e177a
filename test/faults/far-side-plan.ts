import { Rng } from "./prng";

/**
 * What the far-side campaign (far-side.ts) does to one seed, as plain data: its steps (starts
 * through the out-of-process providers, MCP calls, user-tool calls, calls on the session's MCP
 * face, resets, pauses) and its network faults. Also the shapes the far-side checker
 * (far-side-checker.ts) reads: where each fault fired, and when.
 *
 * Each network fault acts at one of the paths below, on the calls after `after` hits, `times`
 * times: `down` (the connection fails before the far side sees the call), `lose-answer` (the far
 * side took the call, the answer is lost), `overloaded` (a 503 answer) or `delay`.
 */

/** The paths a network fault can act at. */
export const FAR_POINTS = [
  "remote-call",
  "a2a-call",
  "callback",
  "acp-connect",
  "mcp-call",
  "mcp-face",
] as const;
export type FarPoint = (typeof FAR_POINTS)[number];
export type NetKind = "down" | "lose-answer" | "overloaded" | "delay";

export interface NetRule {
  point: FarPoint;
  kind: NetKind;
  after: number;
  times: number;
  ms?: number;
}

/**
 * One network fault as it fired: on which path, at which request (`detail`: method, path and
 * the start of the body, which name the run, task or tool call it belonged to), and when, on
 * both clocks: `at` is `performance.now()` (the clock of the history's operations), `clock` is
 * `Date.now()` (the clock of the session's events, mocked forward during the drain).
 */
export interface FarFault {
  kind: NetKind;
  point: FarPoint;
  at: number;
  clock: number;
  detail: string;
}

export type Provider = "remote" | "a2a" | "acp";
export const PROVIDER_NAMES: Record<Provider, string> = {
  remote: "far-remote",
  a2a: "far-a2a",
  acp: "far-acp",
};
/** The paths each provider's runs travel. */
export const PATHS: Record<Provider, readonly FarPoint[]> = {
  remote: ["remote-call", "callback"],
  a2a: ["a2a-call"],
  acp: ["acp-connect"],
};

export type FarStep =
  | { op: "start"; provider: Provider; tag: string; prompt: string; answer: string }
  | { op: "mcp"; tag: string }
  | { op: "tool"; tag: string; behaviour: "answer" | "throw" | "hang" }
  | { op: "face"; tag: string }
  | { op: "abort" }
  | { op: "evict" }
  | { op: "pause"; ms: number };

export interface FarScenario {
  seed: number;
  steps: FarStep[];
  rules: NetRule[];
}

function generateSteps(seed: number, rng: Rng): FarStep[] {
  let n = 0;
  const tag = (): string => `f${seed}-${n++}`;
  const steps: FarStep[] = [];
  const total = rng.int(5, 9);
  while (steps.length < total) {
    const kind = rng.weighted([
      ["start", 8],
      ["mcp", 3],
      ["tool", 3],
      ["face", 2],
      ["abort", 2],
      ["evict", 1],
      ["pause", 2],
    ] as const);
    if (kind === "start") {
      const provider = rng.pick(["remote", "a2a", "acp"] as const);
      const t = tag();
      // the far sides answer with an echo: this Worker's scripted model, the ACP agent's echo
      steps.push({ op: "start", provider, tag: t, prompt: `far ${t}`, answer: `echo: far ${t}` });
    } else if (kind === "mcp") steps.push({ op: "mcp", tag: tag() });
    else if (kind === "face") steps.push({ op: "face", tag: tag() });
    else if (kind === "tool")
      steps.push({
        op: "tool",
        tag: tag(),
        behaviour: rng.weighted([
          ["answer", 4],
          ["throw", 1],
          ["hang", 1],
        ] as const),
      });
    else if (kind === "pause") steps.push({ op: "pause", ms: rng.int(5, 60) });
    else steps.push({ op: kind });
  }
  return steps;
}

export function generateFarSide(seed: number): FarScenario {
  const rng = new Rng(seed);
  const steps = generateSteps(seed, rng);
  const rules: NetRule[] = [];
  // the seed's focus path first, so every path is covered every six seeds
  const focus = FAR_POINTS[seed % FAR_POINTS.length]!;
  const count = rng.int(2, 4);
  for (let i = 0; i < count; i++) {
    const point = i === 0 ? focus : rng.pick(FAR_POINTS);
    const kinds: NetKind[] =
      point === "acp-connect"
        ? ["down", "overloaded", "delay"]
        : ["down", "lose-answer", "overloaded", "delay"];
    const kind = rng.pick(kinds);
    rules.push({
      point,
      kind,
      after: rng.int(0, 3),
      times: rng.int(1, 3),
      ...(kind === "delay" ? { ms: rng.int(5, 80) } : {}),
    });
  }
  return { seed, steps, rules };
}
