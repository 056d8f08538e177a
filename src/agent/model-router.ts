import type { ModelClient } from "./model";
import { OpenAiModel } from "./openai-model";
import { ScriptedModel } from "./scripted-model";
import { type AiBinding, WorkersAiModel } from "./workers-ai-model";

/** Deployment settings that pick and configure model adapters (from `wrangler.toml` vars and secrets). */
export interface ModelSettings {
  defaultModel: string;
  openAiBaseUrl?: string;
  openAiApiKey?: string;
  ai?: AiBinding;
}

/** Whether a model route can be served by this deployment; `undefined` when it can, else the reason. */
export function modelRouteProblem(route: string, settings: ModelSettings): string | undefined {
  if (route === "scripted") return undefined;
  if (route.startsWith("openai:") && route.length > "openai:".length) {
    return settings.openAiBaseUrl ? undefined : "OPENAI_BASE_URL is not configured";
  }
  if (route.startsWith("workers-ai:") && route.length > "workers-ai:".length) {
    return settings.ai ? undefined : "the AI binding is not configured (use the `ai` environment)";
  }
  return `unknown model route "${route}" (use scripted, openai:<model> or workers-ai:<model>)`;
}

const scripted = new ScriptedModel();

/** Resolves a route to its adapter. Callers check `modelRouteProblem` first (at session creation). */
export function modelFor(route: string, settings: ModelSettings): ModelClient {
  if (route.startsWith("openai:")) {
    const config = { baseUrl: settings.openAiBaseUrl ?? "", model: route.slice("openai:".length) };
    return new OpenAiModel(settings.openAiApiKey ? { ...config, apiKey: settings.openAiApiKey } : config);
  }
  if (route.startsWith("workers-ai:") && settings.ai)
    return new WorkersAiModel(settings.ai, route.slice("workers-ai:".length));
  return scripted;
}
