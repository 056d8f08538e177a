import type { SessionHost } from "../../src/agent/host";
import { TurnDriver } from "../../src/agent/turn-driver";
import { Turns } from "../../src/agent/turns";
import type { Deployment } from "../../src/platform/deployment";
import { sessionStub } from "../../src/platform/stubs";
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
import { RemoteRuns } from "../transports/remote-runs";
import { A2aRuns } from "../transports/a2a-runs";
import { SessionContext } from "./session-context";
import { sessionHost } from "./session-host";
import { EventLog } from "../store/event-log";
import { SessionStores } from "../store/session-stores";
import { AlarmClock } from "./alarm-clock";
import { DriveLoop } from "./drive-loop";
import { SessionSignals } from "./signals";
import { faceDecisionsOn, McpFace } from "./mcp-face";
import { SessionApprovals } from "./approvals";
import { SessionSchedules } from "./schedules";
import { TurnDeadline } from "./turn-deadline";
import { Deletion, type Eraser } from "./deletion";
import { Retention } from "./retention";
import { TraceExport } from "./trace-export";
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
  approvals: SessionApprovals;
  schedules: SessionSchedules;
  deletion: Deletion;
  retention: Retention;
}

/** Envelope kinds that reach an object through `deliver` (a callback leaves the deployment instead). */
const DELIVERED_KINDS = ["run-result", "cancel-run", "report", "settled", "approval"] as const;

/**
 * The composition of a session object over its (migrated) storage, in one direction: each thing
 * is built from what is built before it, and nothing is wired afterwards. The signals come first
 * (a turn ended, an envelope arrived, work is due: signals.ts), then the turns' durable state,
 * the context the parts share, the parts (each added to the signals with the envelope kinds and
 * turn-end hook it declares), the turn driver over them, and last the drive loop, which runs the
 * parts' work in the order listed. Nothing here decides anything: behaviour lives in the parts.
 * `eraser`: how its deletion erases the object (the shell's); `created`: the schema was created
 * just now (the stores know their tables are empty); `tables`: the object's tables as it opened.
 */
export function assembleParts(
  state: DurableObjectState,
  env: Env,
  deployment: Deployment,
  eraser: Eraser,
  { created = false, tables = [] }: { created?: boolean; tables?: Iterable<string> } = {},
): Parts {
  const log = new EventLog(state.storage.sql);
  const subscribers = new Subscribers(state, log);
  const stores = new SessionStores(state.storage, log, (events) => subscribers.publish(events), {
    created,
    tables,
  });
  const signals = new SessionSignals();
  const settings = turnSettingsOf(env, stores.header);
  const turns = new Turns(stores, settings, signals);
  const alarm = new AlarmClock(state.storage);
  const watch = signals.add(new ChildWatch(stores, (id) => sessionStub(env, id), alarm));
  const ctx = new SessionContext(env, deployment, stores, turns, signals, watch);

  // the parts, each added to the signals as it is built (the order of their turn-end hooks); an
  // out-of-process transport reports its run's result through `deliver` (de-duplicated), the
  // local one (spawn, fork), which the runs' one owner builds over itself, to that owner
  const callbacks = new CallbackSender(ctx);
  const delivery = signals.add(new Delivery(ctx, signals, callbacks));
  const deliver = delivery.deliver.bind(delivery);
  // built before the transports (an ACP agent's permission requests are approvals), added to
  // the signals with the parts below
  const approvals = new SessionApprovals(ctx, settings);
  const remote = new RemoteRuns(ctx, deliver);
  const acp = new AcpRuns(ctx, deliver, approvals);
  const a2a = new A2aRuns(ctx, deliver);
  const runs = new OneShotRuns(ctx, [remote, acp, a2a]);
  const local = signals.add(runs.local);
  signals.add(remote);
  signals.add(acp);
  signals.add(a2a);
  signals.add(runs);
  const schedules = new SessionSchedules(ctx);
  const oneShot = signals.add(new OneShotChild(ctx, schedules));
  const drains = new Drains(ctx);
  const children = signals.add(new ContinuableParent(ctx, drains));
  const self = signals.add(new ContinuableChild(ctx, drains, runs));
  // a turn's end denies its pending approvals (before a callback or a result reads the turn)
  signals.add(approvals);
  // last: a callback carries the turn's result after the runs and the one-shot child saw its end
  signals.add(callbacks);
  signals.requireHandlers(DELIVERED_KINDS);

  const deadline = new TurnDeadline(ctx);
  const deletion = new Deletion(ctx, runs, schedules, eraser);
  const retention = new Retention(ctx, deletion, env.RETENTION_DAYS);
  const traceExport = new TraceExport(ctx, deletion, env);
  const host = sessionHost(ctx, runs, children, self, schedules);
  const driver = new TurnDriver<SessionHost>({
    stores,
    turns,
    settings,
    models: ctx.models,
    tools: ctx,
    host,
    approvals,
    live: subscribers,
    budget: ctx.budget,
  });
  // the order their hooks run: a deletion first (its erasure ends the pass), a cut-short drain
  // before any model step, then approvals that timed
  // out, scheduled messages that are due and a turn's deadline, then the step, then the outbox, then repairs and
  // transports
  const loop = new DriveLoop(
    alarm,
    [
      deletion,
      retention,
      self,
      approvals,
      schedules,
      deadline,
      driver,
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
      traceExport,
    ],
    signals,
    stores.header,
  );
  const mcp = new McpFace(ctx, host, runs, approvals, faceDecisionsOn(env.MCP_FACE_DECISIONS));
  return {
    stores,
    ctx,
    subscribers,
    loop,
    runs,
    oneShot,
    children,
    drains,
    self,
    delivery,
    remote,
    mcp,
    approvals,
    schedules,
    deletion,
    retention,
  };
}
