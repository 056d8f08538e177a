import { mayUse, scopeOf } from "../../src/providers/provider-access";
import { builtinTools } from "../../src/agent/builtin-tools";
import type { SessionHost } from "../../src/agent/host";
import { ToolCatalog } from "../../src/agent/tool-source";
import type { TurnControl } from "../../src/agent/turn-control";
import { MAX_STEPS_PER_TURN, TurnDriver } from "../../src/agent/turn-driver";
import { DEFAULT_MODEL_CALL_POLICY, type ModelCallPolicy } from "../../src/agent/model-calls";
import { compact } from "../../src/core/compact";
import { DEFAULT_MAX_LOG_BYTES, logRefusal, quotaOf } from "../../src/core/quotas";
import type { Deployment } from "../../src/platform/deployment";
import { defaultModelOf } from "../../src/platform/models";
import { registryStub, sessionStub } from "../../src/platform/stubs";
import { AcpRuns } from "../transports/acp-runs";
import { CallbackSender } from "../messaging/callback-sender";
import { ContinuableChild } from "../delegation/continuable/continuable-child";
import { ContinuableParent } from "../delegation/continuable/continuable-parent";
import { Drains } from "../delegation/continuable/drains";
import { ChildWatch } from "../delegation/child-watch";
import { Delivery } from "../messaging/delivery";
import { EventStream } from "./event-stream";
import { OneShotChild } from "../delegation/one-shot/one-shot-child";
import { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { RunLedger } from "../delegation/one-shot/run-ledger";
import { LocalRuns } from "../transports/local-runs";
import { RemoteRuns, remoteSettings } from "../transports/remote-runs";
import { A2aRuns } from "../transports/a2a-runs";
import type { SessionContext } from "./session-context";
import { sessionHost } from "./session-host";
import { EventLog } from "../store/event-log";
import { SessionStores } from "../store/session-stores";
import { DriveLoop } from "./drive-loop";
import { envelopeHandlers, type SessionPart } from "./part";
import { TurnControlRelay } from "./turn-control-relay";
import { DelegationTools } from "./delegation-tools";
import { McpFace } from "./mcp-face";
import { McpToolSource } from "../../src/agent/mcp-tools";

/** A session's parts, built once its schema exists: what the shell's RPC methods reach. */
export interface Parts {
  stores: SessionStores;
  ctx: SessionContext;
  turns: TurnControl;
  stream: EventStream;
  loop: DriveLoop;
  runs: OneShotRuns;
  oneShot: OneShotChild;
  children: ContinuableParent;
  drains: Drains;
  self: ContinuableChild;
  delivery: Delivery;
  remote: RemoteRuns;
  mcp: McpFace;
}

/** Envelope kinds that reach an object through `deliver` (a callback leaves the deployment instead). */
const DELIVERED_KINDS = ["run-result", "cancel-run", "report", "settled"] as const;

/**
 * Wires a session object's parts over its (migrated) storage: the log and its stream, the stores,
 * the shared context, the parts, the turn driver (whose turn-end hooks and envelope handlers are
 * the parts'), and the drive loop over the parts in the order their hooks run. Nothing here
 * decides anything: behaviour lives in the parts. `created`: the schema was created just now (the
 * stores know their tables are empty); `tables`: the object's tables as it opened.
 */
export function assembleParts(
  state: DurableObjectState,
  env: Env,
  deployment: Deployment,
  { created = false, tables = [] }: { created?: boolean; tables?: Iterable<string> } = {},
): Parts {
  const log = new EventLog(state.storage.sql);
  const stream = new EventStream(state, log);
  const stores = new SessionStores(state.storage, log, (events) => stream.publish(events), {
    created,
    tables,
  });
  const loop = new DriveLoop(state.storage, () => stores.header.get()?.id ?? "");
  const turns = new TurnControlRelay();
  const watch = new ChildWatch(
    stores,
    (id) => sessionStub(env, id),
    (at) => loop.wakeBy(at),
  );
  const ctx = sessionContext(env, deployment, stores, turns, {
    kick: () => loop.kickSoon(),
    childStarted: () => watch.started(),
  });
  const header = ctx.header;
  const callbacks = new CallbackSender(ctx);
  const delivery = new Delivery(ctx, (envelope) => callbacks.send(envelope));
  // every way a one-shot child runs; out-of-process results go through `deliver` (de-duplicated)
  const ledger = new RunLedger(ctx);
  const local = new LocalRuns(ctx, ledger);
  const remote = new RemoteRuns(ctx, (envelope) => delivery.deliver(envelope));
  const acp = new AcpRuns(ctx, (envelope) => delivery.deliver(envelope));
  const a2a = new A2aRuns(ctx, (envelope) => delivery.deliver(envelope));
  const runs = new OneShotRuns(ctx, ledger, [local, remote, acp, a2a]);
  const oneShot = new OneShotChild(ctx);
  const drains = new Drains(ctx);
  const children = new ContinuableParent(ctx, drains);
  const self = new ContinuableChild(ctx, drains, runs);
  const model = (): string => header()?.options.model ?? defaultModelOf(env);
  const host = sessionHost(ctx, runs, children, self);
  // filled below, before anything runs, in the order their hooks run: a cut-short drain before
  // any model step, then the step, then the outbox, then repairs and transports
  const parts: SessionPart[] = [];
  const driver = new TurnDriver<SessionHost>({
    stores,
    get sessionId() {
      return header()?.id ?? "";
    },
    maxSteps: positiveInt(env.MAX_STEPS_PER_TURN, MAX_STEPS_PER_TURN),
    modelRoute: model,
    model: () => ctx.models.client(model()),
    modelPolicy: modelPolicyOf(env),
    params: () => {
      const options = header()?.options;
      if (options?.temperature === undefined && options?.maxOutputTokens === undefined) return undefined;
      return compact({ temperature: options.temperature, maxOutputTokens: options.maxOutputTokens });
    },
    onTextDelta: (delta) => stream.publishDelta({ type: "assistant/delta", ...delta }),
    onStepUsage: (usage) => stores.usage.addOwn(usage),
    budget: () => {
      const budget = header()?.options.budget;
      return budget && { tokens: budget.tokens, used: stores.usage.budgetUsed() };
    },
    logQuota: () => ({ bytes: stores.log.bytes(), max: quotaOf(ctx.limits.logCap, DEFAULT_MAX_LOG_BYTES) }),
    system: () => header()?.options.persona,
    tools: () => ctx.tools.visible(header()),
    host,
    inFlight: (keys) => stores.runs.inFlight(keys),
    onTurnEnd: (turn, reason, turnStartSeq) => {
      for (const part of parts) part.onTurnEnd?.(turn, reason, turnStartSeq);
    },
  });
  turns.attach(driver);
  parts.push(
    self,
    turnPart(driver),
    delivery,
    runs,
    local,
    children,
    oneShot,
    remote,
    acp,
    a2a,
    callbacks,
    watch,
  );
  delivery.install(envelopeHandlers(parts, DELIVERED_KINDS));
  loop.install(parts);
  const mcp = new McpFace(ctx, host, runs);
  return { stores, ctx, turns, stream, loop, runs, oneShot, children, drains, self, delivery, remote, mcp };
}

/** The session context: the parts' only way to the stores, the turn, other objects and the registry. */
function sessionContext(
  env: Env,
  deployment: Deployment,
  stores: SessionStores,
  turns: TurnControl,
  loop: Pick<SessionContext, "kick" | "childStarted">,
): SessionContext {
  return {
    stores,
    header: () => stores.header.get(),
    turns,
    // where the model's tools come from, in the order it sees them
    tools: new ToolCatalog<SessionHost>([
      builtinTools(),
      ...deployment.toolSources(env),
      // a server that cannot be listed is in the log once per failure streak, while the log has room
      new McpToolSource({
        unavailable: (failure) => {
          if (!logRefusal(stores.log.bytes(), env.MAX_LOG_BYTES))
            stores.transact(() => stores.log.append("mcp/server-unavailable", failure));
        },
      }),
      new DelegationTools(() => registryStub(env).list(), registryStub(env).id.toString()),
    ]),
    session: (id, locationHint) => sessionStub(env, id, locationHint),
    // a provider of another tenant, or outside the session's `providers`, is no provider at all
    provider: async (name) => {
      const record = await registryStub(env).resolve(name);
      const header = stores.header.get();
      return record && header && mayUse(record, scopeOf(header)) ? record : undefined;
    },
    // the model routes this deployment serves (checked when a session or child is created)
    models: deployment.models(env),
    defaultModel: defaultModelOf(env),
    limits: {
      depthCap: env.MAX_DEPTH_CAP,
      childCap: env.MAX_CHILDREN_PER_SESSION,
      treeCap: env.MAX_SESSIONS_PER_TREE,
      inboxCap: env.MAX_PENDING_MESSAGES,
      logCap: env.MAX_LOG_BYTES,
    },
    remoteSettings: remoteSettings(env),
    ...loop,
  };
}

/** The turn driver as a part: a model step on every pass, due at once while one is owed. */
function turnPart(driver: TurnDriver<SessionHost>): SessionPart {
  return {
    name: "turn driver",
    step: () => driver.step(),
    nextDue: () => (driver.owesStep() ? Date.now() : undefined),
  };
}

/** Model call timeout and attempts per step from the Worker's vars (MODEL_TIMEOUT_SECONDS, MODEL_ATTEMPTS_PER_STEP). */
function modelPolicyOf(env: Env): ModelCallPolicy {
  // optional: an embedding Worker's wrangler.toml need not set them
  const vars = env as Partial<Pick<Env, "MODEL_TIMEOUT_SECONDS" | "MODEL_ATTEMPTS_PER_STEP">>;
  return {
    ...DEFAULT_MODEL_CALL_POLICY,
    timeoutMs: positiveInt(vars.MODEL_TIMEOUT_SECONDS, DEFAULT_MODEL_CALL_POLICY.timeoutMs / 1000) * 1000,
    attemptsPerStep: positiveInt(vars.MODEL_ATTEMPTS_PER_STEP, DEFAULT_MODEL_CALL_POLICY.attemptsPerStep),
  };
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
