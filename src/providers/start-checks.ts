import { quote } from "../core/quote";
import { fail, type Outcome, ok } from "../contract/errors";
import type { StartRequest } from "../contract/run";
import { checkMaxDepthForm } from "../core/depth";
import { type Descriptor, oneShotDescriptor } from "../core/descriptor";
import { checkOutputSchema } from "../core/json-schema-subset";
import { describeProvider, type ProviderInfo, type ProviderRecord } from "./catalog";

/**
 * The start sequence's checks (semantics.md §5.1), all before any child exists, in this order:
 * unknown provider -> capabilities (outputSchema, depthLimit, toolFilter, persona; first miss
 * wins) -> maxDepth form -> output schema subset -> descriptor snapshot.
 */

export interface CheckedStart {
  provider: ProviderRecord;
  info: ProviderInfo;
  descriptor: Descriptor;
  maxDepth?: number;
  outputSchema?: Record<string, unknown>;
}

export function checkStart(
  name: string,
  record: ProviderRecord | undefined,
  request: StartRequest,
): Outcome<CheckedStart> {
  if (!record) return fail("NO_PROVIDER", `no provider named ${quote(name)}`);
  const info = describeProvider(record);
  const asked: [keyof ProviderInfo["capabilities"], boolean][] = [
    ["outputSchema", request.outputSchema !== undefined],
    ["depthLimit", request.maxDepth !== undefined],
    ["toolFilter", request.toolFilter !== undefined],
    ["persona", request.persona !== undefined],
  ];
  for (const [capability, requested] of asked) {
    if (requested && !info.capabilities[capability]) {
      const option = capability === "depthLimit" ? "maxDepth" : capability;
      return fail("UNSUPPORTED_CAPABILITY", `provider ${name} does not support ${option}`);
    }
  }
  const depthProblem = checkMaxDepthForm(request.maxDepth);
  if (depthProblem) return depthProblem;
  if (request.outputSchema !== undefined) {
    const schemaProblem = checkOutputSchema(request.outputSchema);
    if (schemaProblem) return schemaProblem;
  }
  const checked: CheckedStart = {
    provider: record,
    info,
    descriptor: oneShotDescriptor(name, request.label),
  };
  if (request.maxDepth !== undefined) checked.maxDepth = request.maxDepth as number;
  if (request.outputSchema !== undefined)
    checked.outputSchema = request.outputSchema as Record<string, unknown>;
  return ok(checked);
}
