import type { ModelClient } from "./model";
import type { ModelProvider } from "./model-provider";
import { OpenAiModel } from "./openai-model";
import { ScriptedModel } from "./scripted-model";
import { type AiBinding, WorkersAiModel } from "./workers-ai-model";

/** Deployment settings that configure the built-in model providers (`wrangler.toml` vars and secrets). */
export interface ModelSettings {
  defaultModel: string;
  openAiBaseUrl?: string;
  openAiApiKey?: string;
  ai?: AiBinding;
}

const scripted = new ScriptedModel();

/**
 * The built-in model routes: `scripted` (deterministic, offline; api.md), `openai:<model>` (any
 * OpenAI-compatible server at OPENAI_BASE_URL) and `workers-ai:<model>` (the AI binding, only
 * where it is bound).
 */
export function builtinModels(settings: ModelSettings): ModelProvider[] {
  return [
    { prefix: "scripted", namesModel: false, problem: () => undefined, client: () => scripted },
    {
      prefix: "openai",
      namesModel: true,
      problem: () => (settings.openAiBaseUrl ? undefined : "OPENAI_BASE_URL is not configured"),
      client: (model): ModelClient => {
        const config = { baseUrl: settings.openAiBaseUrl ?? "", model };
        return new OpenAiModel(settings.openAiApiKey ? { ...config, apiKey: settings.openAiApiKey } : config);
      },
    },
    {
      prefix: "workers-ai",
      namesModel: true,
      problem: () =>
        settings.ai ? undefined : "the AI binding is not configured (use the `ai` environment)",
      client: (model): ModelClient => {
        if (!settings.ai) throw new Error("the AI binding is not configured");
        return new WorkersAiModel(settings.ai, model);
      },
    },
  ];
}
