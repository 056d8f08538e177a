import { EXTERNAL_MODEL } from "../../src/agent/external-session";
import { compact } from "../../src/core/compact";
import type { ChildInit } from "../../src/contract/child-init";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { isSessionId } from "../../src/contract/ids";
import { intersectToolFilters } from "../../src/contract/tool-filter";
import type { AgentOptions, McpServerSpec, SessionHeader } from "../../src/contract/session";
import type { ToolFilter } from "../../src/agent/tools";
import { childDepth, deploymentDepthCap } from "../../src/core/depth";
import {
  childJurisdiction,
  type Jurisdiction,
  type LocationHint,
  newPlacedId,
  type Placement,
  placeId,
  placementOf,
} from "../../src/core/placement";
import type { SessionContext } from "../session/session-context";

/**
 * What every child start checks in the parent, one-shot and continuable alike, before any child
 * exists: depth (monotone, capped), tool filter names, model route, the child id and the
 * children-per-session budget. Also what a child inherits.
 */

export interface ChildRequest {
  childId?: string | undefined;
  model?: string | undefined;
  maxDepth?: number | undefined;
  toolFilter?: ToolFilter | undefined;
  persona?: string | undefined;
  temperature?: number | undefined;
  maxOutputTokens?: number | undefined;
  mcpServers?: McpServerSpec[] | undefined;
  jurisdiction?: Jurisdiction | undefined;
  locationHint?: LocationHint | undefined;
}

export interface PlacedChild {
  childId: string;
  depth: number;
  options: AgentOptions;
  /** The child's jurisdiction (inherited, never left) and location hint. */
  placement: Placement;
}

/**
 * Whether this parent used `childId` already: a child it owns, a one-shot run (also one held for
 * its caller's retry), or a continuable start whose reservation waits for a retry.
 */
function idInUse(ctx: SessionContext, childId: string): boolean {
  const { children, runs, flags } = ctx.stores;
  return (
    children.has(childId) ||
    runs.byChildId(childId) !== undefined ||
    flags.get(`start-key:${childId}`) !== undefined
  );
}

/** The id a child gets: the caller's (checked against the child's jurisdiction) or a new one. */
function placedChildId(
  jurisdiction: Jurisdiction | undefined,
  reserved: string | undefined,
): Outcome<string> {
  const id = reserved ?? newPlacedId(jurisdiction);
  if (!isSessionId(id)) return fail("INVALID_REQUEST", "childId must be a UUID");
  return placeId(id, jurisdiction);
}

/** The id a caller-reserved `childId` is placed under in this parent, if the request is placeable. */
export function reservedChildId(
  header: SessionHeader,
  request: Pick<ChildRequest, "childId" | "jurisdiction">,
): string | undefined {
  if (request.childId === undefined) return undefined;
  const jurisdiction = childJurisdiction(header.jurisdiction, request.jurisdiction);
  if (!jurisdiction.ok) return undefined;
  const placed = placedChildId(jurisdiction.value, request.childId);
  return placed.ok ? placed.value : undefined;
}

/**
 * `reattach`: the request is a retry of a start this parent already reserved under the same id,
 * so the id is not a duplicate and the child was already counted against the budget.
 */
export function placeChild(
  ctx: SessionContext,
  header: SessionHeader,
  request: ChildRequest,
  reattach = false,
): Outcome<PlacedChild> {
  const depth = childDepth(header.delegationDepth, request.maxDepth, deploymentDepthCap(ctx.limits.depthCap));
  if (!depth.ok) return depth;
  if (request.toolFilter) {
    const unknown = ctx.tools.unknownNames(request.toolFilter);
    if (unknown.length > 0)
      return fail("INVALID_REQUEST", `toolFilter names unknown tools: ${unknown.join(", ")}`);
  }
  // a child of a session without a model (external) gets the deployment's default, not none
  const inherited = header.options.model === EXTERNAL_MODEL ? ctx.defaultModel : header.options.model;
  const model = request.model ?? inherited;
  const problem = ctx.models.problem(model);
  if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
  const jurisdiction = childJurisdiction(header.jurisdiction, request.jurisdiction);
  if (!jurisdiction.ok) return jurisdiction;
  const placedId = placedChildId(jurisdiction.value, request.childId);
  if (!placedId.ok) return placedId;
  const childId = placedId.value;
  if (!reattach) {
    // an id made here is new (a random UUID): only a caller's can be one this parent used
    if (request.childId !== undefined && idInUse(ctx, childId))
      return fail("DUPLICATE_CHILD", `child ${childId} already exists`);
    const budget = childBudget(ctx);
    if (!budget.ok) return budget;
  }
  // a token budget is shared down: the child gets what is left of this session's
  const tokens = header.options.budget?.tokens;
  const left = tokens === undefined ? undefined : tokens - ctx.stores.usage.budgetUsed();
  if (left !== undefined && left <= 0 && !reattach)
    return fail("BUDGET_EXCEEDED", `this session's token budget of ${tokens} is spent`);
  return ok({
    childId,
    depth: depth.value,
    options: {
      model,
      ...compact({ persona: request.persona }),
      // the parent's filter bounds the child's: a filter holds for the whole tree below it
      ...compact({ toolFilter: intersectToolFilters(header.options.toolFilter, request.toolFilter) }),
      ...inheritedOptions(header),
      // sampling parameters: the start request's, else the parent's
      ...compact({
        temperature: request.temperature ?? header.options.temperature,
        maxOutputTokens: request.maxOutputTokens ?? header.options.maxOutputTokens,
      }),
      ...(left === undefined ? {} : { budget: { tokens: Math.max(1, left) } }),
      // MCP servers: the start request's, else the parent's
      ...compact({ mcpServers: request.mcpServers ?? header.options.mcpServers }),
    },
    placement: placementOf({ jurisdiction: jurisdiction.value, locationHint: request.locationHint }),
  });
}

/**
 * The children-per-session budget: local children and remote runs together, over the session's
 * lifetime (MAX_CHILDREN_PER_SESSION).
 */
export function childBudget(ctx: SessionContext): Outcome<void> {
  const cap = positiveInt(ctx.limits.childCap, 1000);
  if (ctx.stores.children.count() + ctx.stores.runs.remoteCount() >= cap) {
    return fail("BUDGET_EXCEEDED", `this session already started ${cap} children (MAX_CHILDREN_PER_SESSION)`);
  }
  return ok(undefined);
}

/** The identity fields every child init carries from its parent. */
export function lineageOf(
  header: SessionHeader,
): Pick<ChildInit, "parentSession" | "lineage" | "tokenHash" | "tenant"> {
  return {
    parentSession: header.id,
    lineage: [...header.lineage, header.id],
    tokenHash: header.tokenHash,
    ...compact({ tenant: header.tenant }),
  };
}

/** What every child's `init` carries whatever its mode: identity, lineage, depth, options, placement. */
export type CommonInit = Omit<ChildInit, "mode" | "descriptor" | "prompt" | "seed" | "outputSchema">;

/**
 * The fields of a child's `init` shared by one-shot and continuable starts (and the run rows of
 * out-of-process ones), from the parent's header and the placed child.
 */
export function childInit(
  header: SessionHeader,
  placed: Pick<PlacedChild, "childId" | "depth" | "options" | "placement">,
  run: { runId: string; provider: string; label: string | undefined },
): CommonInit {
  return {
    v: 1,
    id: placed.childId,
    runId: run.runId,
    provider: run.provider,
    ...lineageOf(header),
    delegationDepth: placed.depth,
    options: placed.options,
    ...compact({ label: run.label }),
    ...placed.placement,
  };
}

/** The header of a new child, from its init (mode-specific fields are added by the caller). */
export function childHeader(
  spec: Omit<ChildInit, "mode" | "outputSchema">,
  seedLength: number,
): SessionHeader {
  return {
    id: spec.id,
    parentSession: spec.parentSession,
    origin: "subagent",
    delegationDepth: spec.delegationDepth,
    createdAt: Date.now(),
    tokenHash: spec.tokenHash,
    lineage: spec.lineage,
    ...compact({ tenant: spec.tenant }),
    options: spec.options,
    ...compact({ label: spec.label }),
    ...(seedLength > 0 ? { seedLength } : {}),
    ...placementOf(spec),
  };
}

/** Writes a fork seed (the parent's completed turns) and continues the turn numbering after it. */
export function writeSeed(ctx: SessionContext, seed: ChildInit["seed"]): void {
  if (!seed || seed.length === 0) return;
  const { stores } = ctx;
  stores.log.appendSeed(seed);
  stores.log.append("session/end-seed", { seedLength: seed.length });
  stores.loop.set({ ...stores.loop.get(), turns: seed.filter((e) => e.type === "turn/start").length });
}

/** The parent's balanced completed-turn prefix: events from seq 0 through the last `turn/end`. */
export function forkSeed(ctx: SessionContext): NonNullable<ChildInit["seed"]> {
  const { log } = ctx.stores;
  const lastEnd = log.last("turn/end");
  if (!lastEnd) return [];
  return log.page(-1, lastEnd.seq + 1).map((e) => ({ type: e.type, at: e.at, data: e.data }));
}

/** Delegation settings a child inherits from its parent. */
export function inheritedOptions(header: SessionHeader): Partial<AgentOptions> {
  const { providers, backgroundMode, reportDelivery } = header.options;
  return {
    ...compact({ providers }),
    ...compact({ backgroundMode }),
    ...compact({ reportDelivery }),
  };
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
