import type { SessionHost } from "../../src/agent/host";
import { TurnDriver } from "../../src/agent/turn-driver";
import { Turns } from "../../src/agent/turns";
import type { Deployment } from "../../src/platform/deployment";
import type { ObjectHost } from "../host/port";
import { AcpRuns } from "../transports/acp-runs";
import { CallbackSender } from "../messaging/callback-sender";
import { ContinuableChild } from "../delegation/continuable/continuable-child";
import { ContinuableParent } from "../delegation/continuable/continuable-parent";
import { Drains } from "../delegation/continuable/drains";
import { ChildWatch } from "../delegation/child-watch";
import { Delivery } from "../messaging/delivery";
import { Subscribers } from "../kernel/subscribers";
import { OneShotChild } from "../delegation/one-shot/one-shot-child";
import { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { RemoteRuns } from "../transports/remote-runs";
import { A2aRuns } from "../transports/a2a-runs";
import { SessionContext } from "./session-context";
import { sessionHost } from "./session-host";
import { EventLog } from "../store/event-log";
import { SessionStores } from "../store/session-stores";
import { AlarmClock } from "../kernel/alarm-clock";
import { DriveLoop } from "../kernel/drive-loop";
import { SessionSignals } from "../kernel/signals";
import { faceDecisionsOn, McpFace } from "../mcp-face/mcp-face";
import { SessionApprovals } from "../approvals/approvals";
import { SessionSchedules } from "../schedules/schedules";
import { TurnDeadline } from "../deadlines/turn-deadline";
import { Deletion, type Eraser } from "../deletion/deletion";
import { Retention } from "../deletion/retention";
import { TraceExport } from "../traces/trace-export";
import { turnSettingsOf } from "./turn-settings";
import { DRIVE_ORDER, STOP_ORDER, TURN_END_ORDER } from "./feature-order";
import { ChildDepartures } from "../delegation/child-departures";
import { inOrder } from "../kernel/in-order";
import type { Outcome } from "../../src/contract/errors";
import { DEFAULT_SERVICE_NAME } from "../../src/trace/otlp";
import { TreePlaces } from "../delegation/tree-places";
import { applyCallback, type CallbackInput } from "../messaging/remote-callbacks";
import { ApprovalDecisions } from "../approvals/approval-decisions";
import { Conversation } from "../conversation/conversation";
import { Listings } from "../delegation/discovery";
import { TraceReads } from "../traces/trace-reads";

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
  conversation: Conversation;
  traces: TraceReads;
  listings: Listings;
  decisions: ApprovalDecisions;
  places: TreePlaces;
  departures: ChildDepartures;
  /** A signed callback from another deployment with a remote run's result (remote-callbacks.ts). */
  remoteCallback(runId: string, input: CallbackInput): Promise<Outcome<{ applied: true }>>;
}

/** Envelope kinds that reach an object through `deliver` (a callback leaves the deployment instead). */
const DELIVERED_KINDS = ["run-result", "cancel-run", "report", "settled", "approval"] as const;

/**
 * The composition of a session object over its (migrated) storage. The signals come first (a turn
 * ended, an envelope arrived, work is due: kernel/signals.ts), then the turns' durable state, the
 * context the parts share, the parts (each added to the signals with the envelope kinds it
 * applies; their turn-end hooks then put in TURN_END_ORDER), the turn driver over them, and last
 * the drive loop over the parts in DRIVE_ORDER (feature-order.ts), which then listens for work
 * due. A part is handed the parts it calls, by their own interfaces. Nothing here decides
 * anything: behaviour lives in the parts.
 * `objectHost`: what the object runs on (host/port.ts); `eraser`: how its deletion erases the
 * object (the shell's); `created`: the schema was created just now (the stores know their tables
 * are empty); `tables`: the object's tables as it opened.
 */
export function assembleParts(
  objectHost: ObjectHost,
  deployment: Deployment,
  eraser: Eraser,
  { created = false, tables = [] }: { created?: boolean; tables?: Iterable<string> } = {},
): Parts {
  const log = new EventLog(objectHost.storage.sql);
  const subscribers = new Subscribers(objectHost.sockets, log);
  const stores = new SessionStores(objectHost.storage, log, (events) => subscribers.publish(events), {
    created,
    tables,
  });
  const signals = new SessionSignals();
  const settings = turnSettingsOf(objectHost.vars, stores.header);
  const turns = new Turns(stores, settings, signals);
  const alarm = new AlarmClock(objectHost.storage);
  const watch = signals.add(new ChildWatch(stores, (id) => objectHost.objects.session(id), alarm));
  const ctx = new SessionContext(objectHost, deployment, stores, turns, signals, watch);

  // the parts, each added to the signals with the envelope kinds it applies; an out-of-process
  // transport reports its run's result through `deliver` (de-duplicated), the
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
  signals.add(approvals);
  signals.add(callbacks);
  signals.requireHandlers(DELIVERED_KINDS);
  signals.orderTurnEnds(TURN_END_ORDER);

  const deadline = new TurnDeadline(ctx);
  const conversation = new Conversation(ctx, subscribers, schedules);
  const deletion = new Deletion(ctx, inOrder([conversation, schedules, runs, delivery], STOP_ORDER), eraser);
  const retention = new Retention(ctx, deletion, objectHost.vars.RETENTION_DAYS);
  const traceExport = new TraceExport(ctx, deletion, objectHost.vars);
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
  const loop = new DriveLoop(
    alarm,
    inOrder(
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
      DRIVE_ORDER,
    ),
    signals,
    stores.header,
  );
  const mcp = new McpFace(ctx, host, runs, approvals, faceDecisionsOn(objectHost.vars.MCP_FACE_DECISIONS));
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
    conversation,
    departures: new ChildDepartures(ctx, runs),
    traces: new TraceReads(ctx, objectHost.vars.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME),
    listings: new Listings(ctx),
    decisions: new ApprovalDecisions(ctx, approvals),
    places: new TreePlaces(ctx),
    remoteCallback: (runId, input) => applyCallback(ctx, remote, runId, input),
  };
}
