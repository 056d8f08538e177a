import { quote } from "../core/quote";
import { fail, type Outcome, ok } from "../contract/errors";
import type { ContinuableStart } from "../contract/continuable";
import type { StartRequest } from "../contract/run";
import { checkMaxDepthForm } from "../core/depth";
import { type Descriptor, oneShotDescriptor } from "../core/descriptor";
import { checkOutputSchema } from "../core/json-schema-subset";
import { describeProvider, type ProviderInfo, type ProviderRecord } from "./catalog";

/**
 * The start sequence's checks of the provider and the request's form, the same for one-shot and
 * continuable starts, all before any child exists, in this order (semantics.md §5.1 steps 2-6,
 * §6.2): unknown provider -> capabilities, first miss wins (a continuable start asks for
 * `continuable` first; then outputSchema, depthLimit, toolFilter, persona) -> maxDepth form ->
 * output schema subset -> the one-shot descriptor. What a start asked for before these (a re-run
 * tool call, a draining parent) is its caller's; what follows (a reserved id's retry, then depth,
 * tool filter names, model route, placement, duplicate id and the children budget, §5.1 step 7)
 * is the placement of the child (durable-objects/delegation/child-spec.ts), or the out-of-process
 * transport's for a provider of another deployment or protocol.
 */

/** A start whose provider exists and offers what it asks for. */
export interface CheckedProvider {
  provider: ProviderRecord;
  info: ProviderInfo;
  maxDepth?: number;
}

/** A one-shot start past every check here: its descriptor, and its output schema if it asked for one. */
export interface CheckedStart extends CheckedProvider {
  descriptor: Descriptor;
  outputSchema?: Record<string, unknown>;
}

type Capability = keyof ProviderInfo["capabilities"] | "continuable";

/** The checks of a one-shot start (semantics.md §5.1). */
export function checkStart(
  name: string,
  record: ProviderRecord | undefined,
  request: StartRequest,
): Outcome<CheckedStart> {
  const checked = checkProvider(name, record, request, []);
  if (!checked.ok) return checked;
  if (request.outputSchema !== undefined) {
    const schemaProblem = checkOutputSchema(request.outputSchema);
    if (schemaProblem) return schemaProblem;
  }
  const start: CheckedStart = { ...checked.value, descriptor: oneShotDescriptor(name, request.label) };
  if (request.outputSchema !== undefined)
    start.outputSchema = request.outputSchema as Record<string, unknown>;
  return ok(start);
}

/** The checks of a continuable start (semantics.md §6.2): its descriptor is built with its placement. */
export function checkContinuableStart(
  name: string,
  record: ProviderRecord | undefined,
  request: ContinuableStart,
): Outcome<CheckedProvider> {
  return checkProvider(name, record, request, ["continuable"]);
}

function checkProvider(
  name: string,
  record: ProviderRecord | undefined,
  request: Pick<StartRequest, "maxDepth" | "toolFilter" | "persona"> & { outputSchema?: unknown },
  first: readonly Capability[],
): Outcome<CheckedProvider> {
  if (!record) return fail("NO_PROVIDER", `no provider named ${quote(name)}`);
  const info = describeProvider(record);
  const asked: [Capability, boolean][] = [
    ...first.map((capability): [Capability, boolean] => [capability, true]),
    ["outputSchema", request.outputSchema !== undefined],
    ["depthLimit", request.maxDepth !== undefined],
    ["toolFilter", request.toolFilter !== undefined],
    ["persona", request.persona !== undefined],
  ];
  for (const [capability, requested] of asked) {
    if (requested && !offers(info, capability)) {
      const option =
        capability === "continuable"
          ? "continuable children"
          : capability === "depthLimit"
            ? "maxDepth"
            : capability;
      return fail("UNSUPPORTED_CAPABILITY", `provider ${name} does not support ${option}`);
    }
  }
  const depthProblem = checkMaxDepthForm(request.maxDepth);
  if (depthProblem) return depthProblem;
  const checked: CheckedProvider = { provider: record, info };
  if (request.maxDepth !== undefined) checked.maxDepth = request.maxDepth as number;
  return ok(checked);
}

function offers(info: ProviderInfo, capability: Capability): boolean {
  return capability === "continuable" ? info.continuable : info.capabilities[capability];
}
