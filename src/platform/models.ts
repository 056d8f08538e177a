import { type BuiltinModelSettings, builtinModels } from "../agent/builtin-models";
import type { ModelProvider } from "../agent/model-provider";
import type { Protocols } from "./deployment";
import { parsePrices, type Prices } from "../core/prices";

/** The built-in model providers, configured from the Worker's env and the deployment's protocols. */
export function builtinModelsOf(env: Env, protocols: Protocols): ModelProvider[] {
  const settings = modelSettingsOf(env);
  if (protocols.openai) settings.openAiSdk = protocols.openai.sdk;
  if (protocols["workers-ai"]) settings.workersAiSdk = protocols["workers-ai"].sdk;
  return builtinModels(settings);
}

/** The model of a session that names none: DEFAULT_MODEL, else `scripted` (deterministic, offline). */
export function defaultModelOf(vars: { DEFAULT_MODEL?: string }): string {
  return vars.DEFAULT_MODEL || "scripted";
}

/**
 * The built-in model providers' settings from the Worker's vars, secrets and bindings; an
 * embedding Worker may set none of them (OPENAI_BASE_URL defaults to OpenAI's API).
 */
function modelSettingsOf(env: Env): BuiltinModelSettings {
  const vars = env as Partial<Env> & { OPENAI_API_KEY?: string };
  const settings: BuiltinModelSettings = {
    defaultModel: defaultModelOf(env),
    openAiBaseUrl: vars.OPENAI_BASE_URL || "https://api.openai.com/v1",
  };
  if (vars.OPENAI_API_KEY) settings.openAiApiKey = vars.OPENAI_API_KEY;
  if (vars.AI) settings.ai = vars.AI;
  return settings;
}

/**
 * What the deployment's models cost (MODEL_PRICES, README "Prices and budgets"). A value that is
 * not a valid price list prices nothing (usage then has no `costUsd`) and says so in the log, and
 * a session that asks for a budget in dollars is refused (its model has no price).
 */
export function pricesOf(vars: { MODEL_PRICES?: string }): Prices {
  const parsed = parsePrices(vars.MODEL_PRICES);
  if (parsed.problem) console.error(`${parsed.problem}: no model has a price`);
  return parsed.prices;
}
