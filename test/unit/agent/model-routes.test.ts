import { describe, expect, it } from "vitest";
import { builtinModels } from "../../../src/agent/builtin-models";
import type { ModelClient } from "../../../src/agent/model";
import { type ModelProvider, ModelRoutes } from "../../../src/agent/model-provider";
import { ScriptedModel } from "../../../src/agent/scripted-model";

/** Both model protocols, as subagents-edge/worker gives them (their SDKs never load here). */
const sdks = {
  openAiSdk: () => import("@ai-sdk/openai-compatible"),
  workersAiSdk: () => import("workers-ai-provider"),
};

const custom = (seen: string[]): ModelProvider => ({
  prefix: "custom",
  namesModel: true,
  problem: (rest) => (rest === "broken" ? "the custom model is broken" : undefined),
  client: (rest): ModelClient => {
    seen.push(rest);
    return new ScriptedModel();
  },
});

describe("model routes: a provider per prefix", () => {
  it("serves scripted, openai:<model> and workers-ai:<model>, and says what is missing for each", () => {
    const offline = new ModelRoutes(builtinModels({ defaultModel: "scripted", ...sdks }));
    expect(offline.problem("scripted")).toBeUndefined();
    expect(offline.client("scripted")).toBeInstanceOf(ScriptedModel);
    expect(offline.problem("openai:gpt-4o")).toBe("OPENAI_BASE_URL is not configured");
    expect(offline.problem("workers-ai:@cf/meta/llama")).toMatch(/AI binding is not configured/);

    const online = new ModelRoutes(
      builtinModels({ defaultModel: "scripted", openAiBaseUrl: "https://x.test/v1", ...sdks }),
    );
    expect(online.problem("openai:gpt-4o")).toBeUndefined();
    const openai = online.client("openai:gpt-4o");
    expect(openai).not.toBeInstanceOf(ScriptedModel);
    expect(typeof openai.generate).toBe("function");
  });

  it("refuses openai: and workers-ai: routes of a deployment without their protocol, naming it", () => {
    const bare = new ModelRoutes(
      builtinModels({ defaultModel: "scripted", openAiBaseUrl: "https://x.test/v1", ai: {} }),
    );
    expect(bare.problem("scripted")).toBeUndefined();
    expect(bare.problem("openai:gpt-4o")).toMatch(
      /^this deployment does not speak the OpenAI-compatible API of openai: routes: .*protocols: \[openai\] .*subagents-edge\/openai/,
    );
    expect(bare.problem("workers-ai:@cf/x")).toMatch(
      /^this deployment does not speak Workers AI, .*protocols: \[workersAi\] .*subagents-edge\/workers-ai/,
    );
  });

  it("refuses routes no provider serves, a bare prefix that needs a model, and a model after scripted", () => {
    const routes = new ModelRoutes(
      builtinModels({ defaultModel: "scripted", openAiBaseUrl: "https://x.test/v1", ...sdks }),
    );
    const unknown =
      'unknown model route "gpt-4" (use scripted, external, openai:<model> or workers-ai:<model>)';
    expect(routes.problem("gpt-4")).toBe(unknown);
    expect(routes.problem("openai")).toMatch(/^unknown model route "openai"/);
    expect(routes.problem("openai:")).toMatch(/^unknown model route "openai:"/);
    expect(routes.problem("scripted:fast")).toMatch(/^unknown model route "scripted:fast"/);
    expect(() => routes.client("gpt-4")).toThrow(/unknown model route/);
  });

  it("hands a user's provider what follows its prefix, colons included, and its own problems", () => {
    const seen: string[] = [];
    const routes = new ModelRoutes([...builtinModels({ defaultModel: "scripted", ...sdks }), custom(seen)]);
    expect(routes.problem("custom:a:b")).toBeUndefined();
    routes.client("custom:a:b");
    expect(seen).toEqual(["a:b"]);
    expect(routes.problem("custom:broken")).toBe("the custom model is broken");
    expect(routes.problem("nope")).toBe(
      'unknown model route "nope" (use scripted, external, openai:<model>, workers-ai:<model> or custom:<model>)',
    );
  });

  it("serves a provider whose routes may name a model or not (a user's prefix) both ways", () => {
    const seen: string[] = [];
    const either: ModelProvider = { ...custom(seen), namesModel: "optional" };
    const routes = new ModelRoutes([...builtinModels({ defaultModel: "scripted", ...sdks }), either]);
    expect(routes.problem("custom")).toBeUndefined();
    expect(routes.problem("custom:small")).toBeUndefined();
    expect(routes.problem("custom:")).toMatch(
      /^unknown model route "custom:" \(use .* or custom\[:<model>\]\)$/,
    );
    routes.client("custom");
    routes.client("custom:small");
    expect(seen).toEqual(["", "small"]);
  });

  it("refuses two providers for one prefix", () => {
    expect(() => new ModelRoutes([custom([]), custom([])])).toThrow(/model prefix custom is served twice/);
  });
});
