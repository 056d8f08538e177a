import { mayUse, scopeOf } from "../../src/providers/provider-access";
import { builtinTools } from "../../src/agent/builtin-tools";
import type { SessionHost } from "../../src/agent/host";
import { ToolCatalog } from "../../src/agent/tool-source";
import { TurnDriver } from "../../src/agent/turn-driver";
import { Turns } from "../../src/agent/turns";
import { logRefusal } from "../../src/core/quotas";
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
import { Subscribers } from "./subscribers";
import { OneShotChild } from "../delegation/one-shot/one-shot-child";
import { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { RemoteRuns, remoteSettings } from "../transports/remote-runs";
import { A2aRuns } from "../transports/a2a-runs";
import type { SessionContext } from "./session-context";
import { sessionHost } from "./session-host";
import { EventLog } from "../store/event-log";
import { SessionStores } from "../store/session-stores";
import { AlarmClock } from "./alarm-clock";
import { DriveLoop } from "./drive-loop";
import { SessionSignals } from "./signals";
import { DelegationToolSource } from "./delegation-tool-source";
import { McpFace } from "./mcp-face";
import { McpToolSource } from "../../src/agent/mcp-tools";
import { turnSettingsOf } from "./turn-settings";

/** A session's parts, built once its schema exists: what the shell's RPC methods reach. */
export interface Parts {
  stores: SessionStores;
  ctx: SessionContext;
  subscribers: Subscribers;
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
 * The composition of a session object over its (migrated) storage, in one direction: each thing
 * is built from what is built before it, and nothing is wired afterwards. The signals come first
 * (a turn ended, an envelope arrived, work is due: signals.ts), then the turns' durable state,
 * the context the parts share, the parts (each added to the signals with the envelope kinds and
 * turn-end hook it declares), the turn driver over them, and last the drive loop, which runs the
 * parts' work in the order listed. Nothing here decides anything: behaviour lives in the parts.
 * `created`: the schema was created just now (the stores know their tables are empty); `tables`:
 * the object's tables as it opened.
 */
export function assembleParts(
  state: DurableObjectState,
  env: Env,
  deployment: Deployment,
  { created = false, tables = [] }: { created?: boolean; tables?: Iterable<string> } = {},
): Parts {
  const log = new EventLog(state.storage.sql);
  const subscribers = new Subscribers(state, log);
  const stores = new SessionStores(state.storage, log, (events) => subscribers.publish(events), {
    created,
    tables,
  });
  const signals = new SessionSignals();
  const settings = turnSettingsOf(env, () => stores.header.get());
  const turns = new Turns(stores, settings, signals);
  const alarm = new AlarmClock(state.storage);
  const watch = signals.add(
    new ChildWatch(
      stores,
      (id) => sessionStub(env, id),
      (at) => alarm.wakeBy(at),
    ),
  );
  const ctx = sessionContext(env, deployment, stores, turns, signals, watch);

  // the parts, each added to the signals as it is built (the order of their turn-end hooks); an
  // out-of-process transport reports its run's result through `deliver` (de-duplicated), the
  // local one (spawn, fork), which the runs' one owner builds over itself, to that owner
  const callbacks = new CallbackSender(ctx);
  const delivery = signals.add(new Delivery(ctx, signals, (envelope) => callbacks.send(envelope)));
  const deliver = delivery.deliver.bind(delivery);
  const remote = new RemoteRuns(ctx, deliver);
  const acp = new AcpRuns(ctx, deliver);
  const a2a = new A2aRuns(ctx, deliver);
  const runs = new OneShotRuns(ctx, [remote, acp, a2a]);
  const local = signals.add(runs.local);
  signals.add(remote);
  signals.add(acp);
  signals.add(a2a);
  signals.add(runs);
  const oneShot = signals.add(new OneShotChild(ctx));
  const drains = new Drains(ctx);
  const children = signals.add(new ContinuableParent(ctx, drains));
  const self = signals.add(new ContinuableChild(ctx, drains, runs));
  // last: a callback carries the turn's result after the runs and the one-shot child saw its end
  signals.add(callbacks);
  signals.requireHandlers(DELIVERED_KINDS);

  const host = sessionHost(ctx, runs, children, self);
  const driver = new TurnDriver<SessionHost>({
    stores,
    turns,
    settings,
    models: ctx.models,
    tools: () => ctx.tools.visible(stores.header.get()),
    host,
    live: { delta: (delta) => subscribers.publishDelta({ type: "assistant/delta", ...delta }) },
  });
  // the order their hooks run: a cut-short drain before any model step, then the step, then the
  // outbox, then repairs and transports
  const loop = new DriveLoop(
    alarm,
    [self, driver, delivery, runs, local, children, oneShot, remote, acp, a2a, callbacks, watch],
    signals,
    () => stores.header.get()?.id ?? "",
  );
  const mcp = new McpFace(ctx, host, runs);
  return { stores, ctx, subscribers, loop, runs, oneShot, children, drains, self, delivery, remote, mcp };
}

/** The session context: the parts' only way to the stores, the turn, other objects and the registry. */
function sessionContext(
  env: Env,
  deployment: Deployment,
  stores: SessionStores,
  turns: Turns,
  signals: SessionSignals,
  watch: ChildWatch,
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
      new DelegationToolSource(() => registryStub(env).list(), registryStub(env).id.toString()),
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
    kick: () => signals.workDue(),
    childStarted: () => watch.started(),
  };
}
