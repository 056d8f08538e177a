import { aiSdkModel } from "./ai-sdk-model";
import { EXTERNAL_MODEL } from "./external-session";
import type { ModelClient } from "./model";
import type { ModelProvider } from "./model-provider";
import { ScriptedModel } from "./scripted-model";

/** Deployment settings that configure the built-in model providers (`wrangler.toml` vars and secrets). */
export interface BuiltinModelSettings {
  defaultModel: string;
  openAiBaseUrl?: string;
  openAiApiKey?: string;
  /** The Workers AI binding (`[ai] binding = "AI"`), where the Worker has one. */
  ai?: unknown;
}

const scripted = new ScriptedModel();

/**
 * A client whose model is made on its first call: the providers' packages are loaded then, not at
 * the Worker's start (a deployment that never calls `openai:` or `workers-ai:` never builds them).
 */
function lazyClient(make: () => Promise<ModelClient>): ModelClient {
  let client: Promise<ModelClient> | undefined;
  return {
    async generate(request) {
      client ??= make();
      return (await client).generate(request);
    },
  };
}

/**
 * The built-in model routes: `scripted` (deterministic, offline; api.md), `openai:<model>` (any
 * OpenAI-compatible server at OPENAI_BASE_URL, through `@ai-sdk/openai-compatible`) and
 * `workers-ai:<model>` (the AI binding through `workers-ai-provider`, only where it is bound).
 * Both network routes stream, and both are AI SDK models behind `aiSdkModel`, as a user's are.
 */
export function builtinModels(settings: BuiltinModelSettings): ModelProvider[] {
  return [
    { prefix: "scripted", namesModel: false, problem: () => undefined, client: () => scripted },
    {
      // a session without a model, for an outside agent to drive (its turn driver runs no turns)
      prefix: EXTERNAL_MODEL,
      namesModel: false,
      problem: () => undefined,
      client: (): ModelClient => ({
        generate: () => Promise.reject(new Error("an external session has no model")),
      }),
    },
    {
      prefix: "openai",
      namesModel: true,
      problem: () => (settings.openAiBaseUrl ? undefined : "OPENAI_BASE_URL is not configured"),
      client: (model): ModelClient =>
        lazyClient(async () => {
          const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
          const provider = createOpenAICompatible({
            name: "openai",
            baseURL: (settings.openAiBaseUrl ?? "").replace(/\/+$/, ""),
            ...(settings.openAiApiKey ? { apiKey: settings.openAiApiKey } : {}),
            includeUsage: true,
          });
          return aiSdkModel(provider.chatModel(model));
        }),
    },
    {
      prefix: "workers-ai",
      namesModel: true,
      problem: () =>
        settings.ai ? undefined : "the AI binding is not configured (use the `ai` environment)",
      client: (model): ModelClient => {
        if (!settings.ai) throw new Error("the AI binding is not configured");
        const binding = settings.ai as Ai;
        return lazyClient(async () => {
          const { createWorkersAI } = await import("workers-ai-provider");
          const provider = createWorkersAI({ binding });
          return aiSdkModel(provider(model as Parameters<typeof provider>[0]));
        });
      },
    },
  ];
}
