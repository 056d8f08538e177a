import { quoteAll } from "../../src/core/quote";
import { EXTERNAL_MODEL } from "../../src/agent/external-session";
import { childRequirements, isMcpFaceCall } from "../../src/core/approvals";
import { compact } from "../../src/core/compact";
import { contextWindowRefusal } from "../../src/core/context-window";
import type { ChildInit } from "../../src/contract/child-init";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { isSessionId } from "../../src/contract/ids";
import { intersectToolFilters } from "../../src/contract/tool-filter";
import type { AgentOptions, McpServerSpec, SessionHeader } from "../../src/contract/session";
import type { ToolFilter } from "../../src/agent/tools";
import { childDepth, deploymentDepthCap } from "../../src/core/depth";
import { logRefusal, treeRefusal } from "../../src/core/quotas";
import { positiveInt } from "../../src/core/positive-int";
import {
  childJurisdiction,
  type Jurisdiction,
  type LocationHint,
  newPlacedId,
  type Placement,
  placeId,
  placementOf,
  reservedIdUnder,
} from "../../src/core/placement";
import { priceOf } from "../../src/core/prices";
import { worstCase } from "../../src/agent/budget";
import { CHARS_PER_TOKEN } from "../../src/agent/context-view";
import { protocolMissing } from "../../src/protocols/protocol";
import type { SessionContext } from "../session/session-context";
import { treeSize } from "./tree-places";

/**
 * What every child start checks in the parent, one-shot and continuable alike, before any child
 * exists: depth (monotone, capped), tool filter names, model route, the child id, the
 * children-per-session budget, the log quota and the tree quota. Also what a child inherits.
 */

export interface ChildRequest {
  childId?: string | undefined;
  model?: string | undefined;
  maxDepth?: number | undefined;
  toolFilter?: ToolFilter | undefined;
  persona?: string | undefined;
  temperature?: number | undefined;
  maxOutputTokens?: number | undefined;
  contextWindow?: number | undefined;
  /** The child's prompt, for its first step's estimate against a budget. */
  prompt?: unknown;
  requireApproval?: string[] | undefined;
  approvalTimeoutSeconds?: number | undefined;
  /** A continuable child's `deadlineSeconds` (its own, never inherited). */
  turnDeadlineSeconds?: number | undefined;
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
  const { children, runs } = ctx.stores;
  return (
    children.has(childId) ||
    runs.byChildId(childId) !== undefined ||
    ctx.stores.continuableStarts.requestOf(childId) !== undefined
  );
}

/**
 * The id a child of `parentId` gets: a new one, or for a caller-reserved `childId` the id derived
 * from the parent and that `childId` (core/placement.ts `reservedIdUnder`: a reserved id lives in
 * its parent's namespace, never in another session's or tenant's).
 */
function placedChildId(
  parentId: string,
  jurisdiction: Jurisdiction | undefined,
  reserved: string | undefined,
): Outcome<string> {
  if (reserved === undefined) return ok(newPlacedId(jurisdiction));
  if (!isSessionId(reserved)) return fail("INVALID_REQUEST", "childId must be a UUID");
  return reservedIdUnder(parentId, reserved, jurisdiction);
}

/** The id a caller-reserved `childId` is placed under in this parent, if the request is placeable. */
export function reservedChildId(
  header: SessionHeader,
  request: Pick<ChildRequest, "childId" | "jurisdiction">,
): string | undefined {
  if (request.childId === undefined) return undefined;
  const jurisdiction = childJurisdiction(header.jurisdiction, request.jurisdiction);
  if (!jurisdiction.ok) return undefined;
  const placed = placedChildId(header.id, jurisdiction.value, request.childId);
  return placed.ok ? placed.value : undefined;
}

/**
 * Whether this parent used a reserved `childId` when such ids were placed as given (`placeId`):
 * its records may still hold that id, and a start naming it again must not make a second child.
 */
function usedAsGiven(ctx: SessionContext, childId: string, jurisdiction: Jurisdiction | undefined): boolean {
  const given = placeId(childId, jurisdiction);
  return given.ok && idInUse(ctx, given.value);
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
  if (request.mcpServers?.length && !ctx.protocols.mcp)
    return fail("UNSUPPORTED_CAPABILITY", `mcpServers: ${protocolMissing("mcp")}`);
  if (request.toolFilter) {
    const unknown = ctx.tools.unknownNames(request.toolFilter);
    if (unknown.length > 0)
      return fail("INVALID_REQUEST", `toolFilter names unknown tools: ${quoteAll(unknown)}`);
  }
  // a child of a session without a model (external) gets the deployment's default, not none
  const inherited = header.options.model === EXTERNAL_MODEL ? ctx.defaultModel : header.options.model;
  const model = request.model ?? inherited;
  const problem = ctx.models.problem(model);
  if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
  const window = contextWindowRefusal(request.contextWindow, ctx.limits.contextWindowCap);
  if (window) return window;
  const jurisdiction = childJurisdiction(header.jurisdiction, request.jurisdiction);
  if (!jurisdiction.ok) return jurisdiction;
  const placedId = placedChildId(header.id, jurisdiction.value, request.childId);
  if (!placedId.ok) return placedId;
  const childId = placedId.value;
  if (!reattach) {
    // an id made here is new (a random UUID): only a caller's can be one this parent used
    if (request.childId !== undefined && idInUse(ctx, childId))
      return fail("DUPLICATE_CHILD", `child ${childId} already exists`);
    if (request.childId !== undefined && usedAsGiven(ctx, request.childId, jurisdiction.value))
      return fail("DUPLICATE_CHILD", `childId ${request.childId} names a child this session started earlier`);
    const budget = childBudget(ctx);
    if (!budget.ok) return budget;
  }
  // a budget is its tree's: the child draws from the same remainder (session/tree-budget.ts)
  const budget = header.options.budget;
  // it starts only while the remainder covers its first step's worst case: its prompt's estimate
  // plus its output limit (each of its model calls then reserves its own, src/agent/budget.ts)
  const spent = reattach
    ? undefined
    : ctx.budget.startRefusal(
        worstCase(
          Math.ceil(JSON.stringify(request.prompt ?? "").length / CHARS_PER_TOKEN),
          request.maxOutputTokens ?? header.options.maxOutputTokens,
          model,
          ctx.prices,
        ),
      );
  if (spent) return fail("BUDGET_EXCEEDED", spent.replace(/^BUDGET_EXCEEDED: /, ""));
  if (budget?.usd !== undefined && !priceOf(ctx.prices, model))
    return fail(
      "INVALID_REQUEST",
      `model: ${model} has no price (MODEL_PRICES) and the tree's budget is in dollars`,
    );
  return ok({
    childId,
    depth: depth.value,
    options: {
      model,
      ...compact({ persona: request.persona }),
      // the parent's filter bounds the child's: a filter holds for the whole tree below it
      ...compact({ toolFilter: intersectToolFilters(header.options.toolFilter, request.toolFilter) }),
      ...inheritedOptions(header),
      // model parameters: the start request's, else the parent's
      ...compact({
        temperature: request.temperature ?? header.options.temperature,
        maxOutputTokens: request.maxOutputTokens ?? header.options.maxOutputTokens,
        contextWindow: request.contextWindow ?? header.options.contextWindow,
      }),
      ...(budget ? { budget: { ...budget, owner: budget.owner ?? header.id } } : {}),
      // MCP servers: the start request's, else the parent's
      ...compact({ mcpServers: request.mcpServers ?? header.options.mcpServers }),
      // approvals: the parent's requirements plus the start's own (never fewer), its timeout or the parent's
      ...compact({
        requireApproval: childRequirements(header.options.requireApproval, request.requireApproval),
        approvalTimeoutSeconds: request.approvalTimeoutSeconds ?? header.options.approvalTimeoutSeconds,
      }),
      ...compact({ turnDeadlineSeconds: request.turnDeadlineSeconds }),
    },
    placement: placementOf({ jurisdiction: jurisdiction.value, locationHint: request.locationHint }),
  });
}

/**
 * What a session may still start, whatever the child's kind: nothing once its log is at its quota
 * (MAX_LOG_BYTES: a start writes to it), and no more children than the children-per-session
 * budget, local children and remote runs together, over the session's lifetime
 * (MAX_CHILDREN_PER_SESSION); at a tree's root, no more sessions in its tree than
 * MAX_SESSIONS_PER_TREE. `local`: the session's children rows, when the caller counted them.
 */
export function childBudget(ctx: SessionContext, local = ctx.stores.children.count()): Outcome<void> {
  const full = logRefusal(ctx.stores.log.bytes(), ctx.limits.logCap);
  if (full) return full;
  const cap = positiveInt(ctx.limits.childCap, 1000);
  if (local + ctx.stores.runs.remoteCount() >= cap) {
    return fail("BUDGET_EXCEEDED", `this session already started ${cap} children (MAX_CHILDREN_PER_SESSION)`);
  }
  // at a tree's root, its tree's size too (a held start taken up again counts anew, like a new one)
  const header = ctx.header();
  return header ? treeBudget(ctx, header, local) : ok(undefined);
}

/**
 * Whether the root's tree has room for one more child of the root (a deeper parent's child asks
 * the root itself, in its `init`: see `takeTreeSlot`).
 */
function treeBudget(ctx: SessionContext, header: SessionHeader, local: number): Outcome<void> {
  if (header.lineage.length > 0) return ok(undefined);
  return treeRefusal(treeSize(ctx, local), ctx.limits.treeCap) ?? ok(undefined);
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
 * out-of-process ones), from the parent's header and the placed child. `callKey`: the tool call
 * that starts it; a child of a call made through the MCP face, or of a session below one, is
 * below the face too.
 */
export function childInit(
  header: SessionHeader,
  placed: Pick<PlacedChild, "childId" | "depth" | "options" | "placement">,
  run: { runId: string; provider: string; label: string | undefined; callKey?: string | undefined },
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
    ...(header.belowMcpFace || isMcpFaceCall(run.callKey) ? { belowMcpFace: true as const } : {}),
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
    ...(spec.belowMcpFace ? { belowMcpFace: true as const } : {}),
  };
}

/** Writes a fork seed (the parent's view) and continues the turn numbering after it. */
export function writeSeed(ctx: SessionContext, seed: ChildInit["seed"]): void {
  if (!seed || seed.length === 0) return;
  const { stores } = ctx;
  stores.log.appendSeed(seed);
  stores.log.append("session/end-seed", { seedLength: seed.length });
  const turns = seed.reduce(
    (n, e) => (e.type === "turn/start" ? Math.max(n, (e.data as { turn: number }).turn) : n),
    0,
  );
  stores.loop.set({ ...stores.loop.get(), turns });
}

/**
 * A fork child's seed: the parent's view as of its last `turn/end`. Without a compaction that is
 * every event from seq 0 through it; after one, the latest summary (its `throughSeq` -1: it stands
 * for the parent's earlier turns), then the parent's whole turns after the summary's boundary.
 */
export function forkSeed(ctx: SessionContext): NonNullable<ChildInit["seed"]> {
  const { log } = ctx.stores;
  const lastEnd = log.last("turn/end");
  if (!lastEnd) return [];
  const compaction = log.last("context/compacted");
  if (!compaction)
    return log.page(-1, lastEnd.seq + 1).map((e) => ({ type: e.type, at: e.at, data: e.data }));
  const { throughSeq } = compaction.data;
  const after = log.page(throughSeq, Math.max(0, lastEnd.seq - throughSeq));
  const firstTurn = after.findIndex((e) => e.type === "turn/start");
  const kept = firstTurn < 0 ? [] : after.slice(firstTurn).filter((e) => e.type !== "context/compacted");
  return [
    { type: "context/compacted", at: compaction.at, data: { ...compaction.data, throughSeq: -1 } },
    ...kept.map((e) => ({ type: e.type, at: e.at, data: e.data })),
  ];
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
