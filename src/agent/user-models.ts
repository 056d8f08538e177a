import type { ModelClient } from "./model";
import type { ModelProvider } from "./model-provider";

/**
 * The model routes an embedding Worker serves (`createSubagents({ models })`): a route
 * `<prefix>` or `<prefix>:<rest>` whose prefix is a key of `models` is served by the client its
 * factory makes from the Worker's env. The factory runs once per object (lazily, the first time a
 * route of its prefix is checked or used); one that throws makes its routes unservable, with its
 * message as the reason, so a session naming one is refused at creation.
 */
export type ModelFactory<E> = (env: E) => ModelClient;

/** Prefixes a user may name: letters, digits, `_` and `-`, not starting with a separator. */
export const MODEL_PREFIX = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

/** Built-in prefixes a user's models may not replace (`openai` and `workers-ai` they may). */
export const RESERVED_MODEL_PREFIXES: readonly string[] = ["scripted", "external"];

export function userModelProviders<E>(
  models: Readonly<Record<string, ModelFactory<E>>>,
  env: E,
): ModelProvider[] {
  return Object.entries(models).map(([prefix, factory]) => {
    let made: { client: ModelClient } | { error: string } | undefined;
    const make = (): { client: ModelClient } | { error: string } => {
      if (made) return made;
      try {
        const client = factory(env);
        made =
          client && typeof client.generate === "function"
            ? { client }
            : { error: `the model factory of "${prefix}" did not return a client with generate()` };
      } catch (error) {
        made = {
          error: `the model factory of "${prefix}" failed: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      return made;
    };
    return {
      prefix,
      namesModel: "optional",
      problem: () => {
        const result = make();
        return "error" in result ? result.error : undefined;
      },
      client: () => {
        const result = make();
        if ("error" in result) throw new Error(result.error);
        return result.client;
      },
    };
  });
}
