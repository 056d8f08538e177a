import type { Usage } from "../contract/events";
import { roundUsd } from "./usage";

/**
 * What a deployment's models cost (the `MODEL_PRICES` var, README "Prices and budgets"): JSON
 * `{"<model route or prefix*>": {"input": <USD per million>, "output": <USD per million>,
 * "cachedInput"?: <USD per million>}}`. An exact route wins over a prefix; of the prefixes the
 * longest. Cached input tokens (part of the input) cost `cachedInput` when it is given, else
 * `input`. Pure.
 */

export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number;
}

export interface Prices {
  exact: ReadonlyMap<string, ModelPrice>;
  /** Longest prefix first. */
  prefixes: readonly (readonly [string, ModelPrice])[];
}

export const NO_PRICES: Prices = { exact: new Map(), prefixes: [] };

/** The prices of a MODEL_PRICES value, or what is wrong with it (then no route has a price). */
export function parsePrices(raw: string | undefined): { prices: Prices; problem?: string } {
  if (raw === undefined || raw.trim() === "") return { prices: NO_PRICES };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { prices: NO_PRICES, problem: "MODEL_PRICES is not JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { prices: NO_PRICES, problem: "MODEL_PRICES is not a JSON object of routes" };
  const exact = new Map<string, ModelPrice>();
  const prefixes: [string, ModelPrice][] = [];
  for (const [route, price] of Object.entries(value)) {
    const checked = checkPrice(price);
    if (typeof checked === "string" || route === "")
      return {
        prices: NO_PRICES,
        problem: `MODEL_PRICES[${JSON.stringify(route)}]: ${checked || "empty route"}`,
      };
    if (route.endsWith("*")) prefixes.push([route.slice(0, -1), checked]);
    else exact.set(route, checked);
  }
  prefixes.sort((a, b) => b[0].length - a[0].length);
  return { prices: { exact, prefixes } };
}

function checkPrice(price: unknown): ModelPrice | string {
  if (typeof price !== "object" || price === null || Array.isArray(price))
    return "not an object with input and output";
  const { input, output, cachedInput, ...extra } = price as Record<string, unknown>;
  const rate = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
  if (Object.keys(extra).length > 0) return `unknown field ${JSON.stringify(Object.keys(extra)[0])}`;
  if (!rate(input) || !rate(output))
    return "input and output must be non-negative numbers (USD per million tokens)";
  if (cachedInput !== undefined && !rate(cachedInput)) return "cachedInput must be a non-negative number";
  return {
    input: input as number,
    output: output as number,
    ...(cachedInput === undefined ? {} : { cachedInput: cachedInput as number }),
  };
}

/** The price of a model route, if the deployment gave one. */
export function priceOf(prices: Prices, route: string): ModelPrice | undefined {
  return prices.exact.get(route) ?? prices.prefixes.find(([prefix]) => route.startsWith(prefix))?.[1];
}

/** `usage` with its `costUsd` at `route`'s price; as it was when the route has none. */
export function priced(usage: Usage | undefined, route: string, prices: Prices): Usage | undefined {
  if (!usage) return usage;
  const price = priceOf(prices, route);
  if (!price) return usage;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const cost =
    (usage.inputTokens - cached) * price.input +
    cached * (price.cachedInput ?? price.input) +
    usage.outputTokens * price.output;
  return { ...usage, costUsd: roundUsd(cost / 1_000_000) };
}
