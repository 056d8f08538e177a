/**
 * @module `subagents-edge/workers-ai`: the `workers-ai:<model>` routes (the Worker's Workers AI
 * binding, `AI`), for `createSubagents({ protocols: [workersAi] })` of `subagents-edge/core`. The
 * AI SDK's Workers AI provider loads on a route's first call.
 */
import type { WorkersAiProtocol } from "../platform/deployment";
import type { Protocol } from "./protocol";

const protocol: WorkersAiProtocol = {
  protocol: "workers-ai",
  sdk: () => import("workers-ai-provider"),
};

/** `workers-ai:<model>` model routes. */
export const workersAi: Protocol = protocol;
