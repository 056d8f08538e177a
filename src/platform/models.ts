import { builtinModels, type ModelSettings } from "../agent/builtin-models";
import { ModelRoutes } from "../agent/model-provider";

/** The model routes a deployment serves: the built-in providers, configured from its env. */
export function modelRoutesOf(env: Env): ModelRoutes {
  return new ModelRoutes(builtinModels(modelSettingsOf(env)));
}

/** The built-in model providers' settings from the Worker's vars, secrets and bindings. */
function modelSettingsOf(env: Env): ModelSettings {
  const vars = env as Env & { OPENAI_API_KEY?: string };
  const settings: ModelSettings = { defaultModel: vars.DEFAULT_MODEL, openAiBaseUrl: vars.OPENAI_BASE_URL };
  if (vars.OPENAI_API_KEY) settings.openAiApiKey = vars.OPENAI_API_KEY;
  const ai = vars.AI;
  if (ai) {
    // The binding's overloads are keyed by literal model names; a model route names its model at
    // run time (the service checks it), so the adapter calls the untyped form.
    const run = ai.run.bind(ai) as NonNullable<ModelSettings["ai"]>["run"];
    settings.ai = { run };
  }
  return settings;
}
