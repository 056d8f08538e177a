import { DEFAULT_CONTEXT_WINDOW } from "../../src/agent/compaction";
import { deploymentRequirements } from "../../src/core/approvals";
import { DEFAULT_MODEL_CALL_POLICY, type ModelCallPolicy } from "../../src/agent/model-calls";
import { MAX_STEPS_PER_TURN, type TurnSettings } from "../../src/agent/turn-settings";
import { compact } from "../../src/core/compact";
import { positiveInt } from "../../src/core/positive-int";
import { DEFAULT_MAX_LOG_BYTES } from "../../src/core/quotas";
import type { SessionHeader } from "../../src/contract/session";
import { defaultModelOf, pricesOf } from "../../src/platform/models";
import type { DeploymentVars } from "../host/deployment-vars";

/**
 * A session's turn settings: its header's model, persona, sampling parameters and context window,
 * over the deployment's vars (MAX_STEPS_PER_TURN, MODEL_TIMEOUT_SECONDS, MODEL_ATTEMPTS_PER_STEP,
 * MAX_LOG_BYTES, DEFAULT_MODEL, DEFAULT_CONTEXT_WINDOW, COMPACTION_MODEL, REQUIRE_APPROVAL,
 * MODEL_PRICES),
 * which are read once.
 */
export function turnSettingsOf(
  vars: DeploymentVars,
  header: { get(): SessionHeader | undefined },
): () => TurnSettings {
  const maxSteps = positiveInt(vars.MAX_STEPS_PER_TURN, MAX_STEPS_PER_TURN);
  const policy = modelPolicyOf(vars);
  const maxLogBytes = positiveInt(vars.MAX_LOG_BYTES, DEFAULT_MAX_LOG_BYTES);
  const defaultModel = defaultModelOf(vars);
  const defaultContextWindow = positiveInt(vars.DEFAULT_CONTEXT_WINDOW, DEFAULT_CONTEXT_WINDOW);
  const compactionRoute = vars.COMPACTION_MODEL?.trim() || undefined;
  const deployment = deploymentRequirements(vars.REQUIRE_APPROVAL);
  const prices = pricesOf(vars);
  if (deployment.invalid)
    console.error(
      'REQUIRE_APPROVAL is not a JSON list of tool names or prefixes ending in "*": every call needs approval',
    );
  return () => {
    const session = header.get();
    const options = session?.options;
    const params =
      options?.temperature === undefined && options?.maxOutputTokens === undefined
        ? undefined
        : compact({ temperature: options.temperature, maxOutputTokens: options.maxOutputTokens });
    return {
      sessionId: session?.id ?? "",
      modelRoute: options?.model ?? defaultModel,
      system: options?.persona,
      params,
      maxSteps,
      policy,
      prices,
      maxLogBytes,
      contextWindow: options?.contextWindow,
      defaultContextWindow,
      compactionRoute,
      requireApproval: [...deployment.patterns, ...(options?.requireApproval ?? [])],
      approvalTimeoutMs:
        options?.approvalTimeoutSeconds === undefined ? undefined : options.approvalTimeoutSeconds * 1000,
    };
  };
}

/** Model call timeout and attempts per step from the Worker's vars (MODEL_TIMEOUT_SECONDS, MODEL_ATTEMPTS_PER_STEP). */
function modelPolicyOf(vars: DeploymentVars): ModelCallPolicy {
  return {
    ...DEFAULT_MODEL_CALL_POLICY,
    timeoutMs: positiveInt(vars.MODEL_TIMEOUT_SECONDS, DEFAULT_MODEL_CALL_POLICY.timeoutMs / 1000) * 1000,
    attemptsPerStep: positiveInt(vars.MODEL_ATTEMPTS_PER_STEP, DEFAULT_MODEL_CALL_POLICY.attemptsPerStep),
  };
}
