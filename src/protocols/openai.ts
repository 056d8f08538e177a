/**
 * @module `subagents-edge/openai`: the `openai:<model>` routes (any OpenAI-compatible server at
 * OPENAI_BASE_URL, OPENAI_API_KEY its key), for `createSubagents({ protocols: [openai] })` of
 * `subagents-edge/core`. The AI SDK's OpenAI-compatible provider loads on a route's first call.
 */
import type { OpenAiProtocol } from "../platform/deployment";
import type { Protocol } from "./protocol";

const protocol: OpenAiProtocol = {
  protocol: "openai",
  sdk: () => import("@ai-sdk/openai-compatible"),
};

/** `openai:<model>` model routes. */
export const openai: Protocol = protocol;
