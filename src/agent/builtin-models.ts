import { aiSdkModel } from "./ai-sdk-model";
import { EXTERNAL_MODEL } from "./external-session";
import type { ModelClient } from "./model";
import type { ModelProvider } from "./model-provider";
import { ScriptedModel } from "./scripted-model";
import { protocolMissing } from "../protocols/protocol";

/** Deployment settings that configure the built-in model providers (`wrangler.toml` vars and secrets). */
export interface BuiltinModelSettings {
  defaultModel: string;
  openAiBaseUrl?: string;
  openAiApiKey?: string;
  /** The Workers AI binding (`[ai] binding = "AI"`), where the Worker has one. */
  ai?: unknown;
  /** The `openai` protocol's AI SDK provider (absent: `openai:` routes are refused, saying so). */
  openAiSdk?: () => Promise<typeof import("@ai-sdk/openai-compatible")>;
  /** The `workers-ai` protocol's AI SDK provider (absent: `workers-ai:` routes are refused, saying so). */
  workersAiSdk?: () => Promise<typeof import("workers-ai-provider")>;
}

const scripted = new ScriptedModel();

/**
 * A client whose model is made on its first call: the providers' packages are loaded then, not at
 * the Worker's start (a deployment that never calls `openai:` or `workers-ai:` never builds them).
 * The client is kept, never the promise of it: the routes are shared by every object of the
 * isolate, and a promise made in one object's request would never settle for the others if that
 * request were cancelled first (workerd ties a promise to the request that made it).
 */
function lazyClient(make: () => Promise<ModelClient>): ModelClient {
  let client: ModelClient | undefined;
  return {
    async generate(request) {
      client ??= await make();
      return client.generate(request);
    },
  };
}

/**
 * The built-in model routes: `scripted` (deterministic, offline; api.md), `openai:<model>` (any
 * OpenAI-compatible server at OPENAI_BASE_URL, through `@ai-sdk/openai-compatible`) and
 * `workers-ai:<model>` (the AI binding through `workers-ai-provider`, only where it is bound).
 * Both network routes stream, and both are AI SDK models behind `aiSdkModel`, as a user's are;
 * each needs its protocol (`openai`, `workers-ai`: the deployment's loader of its AI SDK provider).
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
      problem: () =>
        !settings.openAiSdk
          ? protocolMissing("openai")
          : settings.openAiBaseUrl
            ? undefined
            : "OPENAI_BASE_URL is not configured",
      client: (model): ModelClient =>
        lazyClient(async () => {
          const { createOpenAICompatible } = await settings.openAiSdk!();
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
        !settings.workersAiSdk
          ? protocolMissing("workers-ai")
          : settings.ai
            ? undefined
            : "the AI binding is not configured (use the `ai` environment)",
      client: (model): ModelClient => {
        if (!settings.ai || !settings.workersAiSdk) throw new Error("the AI binding is not configured");
        const binding = settings.ai as Ai;
        const sdk = settings.workersAiSdk;
        return lazyClient(async () => {
          const { createWorkersAI } = await sdk();
          const provider = createWorkersAI({ binding });
          return aiSdkModel(provider(model as Parameters<typeof provider>[0]));
        });
      },
    },
  ];
}
