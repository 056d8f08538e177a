/**
 * What `subagents-edge/worker` and `subagents-edge/core` both export beside `createSubagents`:
 * `defineTool` makes a tool of yours; `aiSdkModel` serves a model route with any Vercel AI SDK
 * language model. The model port's types are here for a model client of your own.
 */
export type { Subagents, SubagentsObjectClass, SubagentsOptions } from "./create-subagents";
export type { Protocol, ProtocolName } from "../protocols/protocol";
export { defineTool } from "./define-tool";
export { aiSdkModel, type AiSdkLanguageModel, type AiSdkModelOptions } from "../agent/ai-sdk-model";
export { ModelError, type ModelErrorDetails, type ModelParams } from "../agent/model";
export type { ToolDefinition, ToolResult, ToolRunContext } from "../agent/tool-definition";
export type { ModelFactory } from "../agent/user-models";
export type {
  ConversationMessage,
  ModelClient,
  ModelPurpose,
  ModelReply,
  ModelRequest,
  ModelStopReason,
  ToolSpec,
} from "../agent/model";
export type { ContentBlock, TextBlock } from "../contract/content";
export type { CompactionTrigger, MessageSource, ToolCall, Usage } from "../contract/events";
