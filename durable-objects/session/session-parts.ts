import { builtinTools } from "../../src/agent/builtin-tools";
import type { SessionHost } from "../../src/agent/host";
import { type ModelSettings, modelFor } from "../../src/agent/model-router";
import { MAX_STEPS_PER_TURN, TurnDriver } from "../../src/agent/turn-driver";
import type { SessionHeader } from "../../src/contract/session";
import { registryStub, sessionStub } from "../../src/platform/stubs";
import { AcpRuns } from "../transports/acp-runs";
import { CallbackSender } from "../messaging/callback-sender";
import { ContinuableChild } from "../delegation/continuable/continuable-child";
import { ContinuableParent } from "../delegation/continuable/continuable-parent";
import { Delivery } from "../messaging/delivery";
import { EventStream } from "./event-stream";
import { OneShotChild } from "../delegation/one-shot/one-shot-child";
import { OneShotRuns } from "../delegation/one-shot/one-shot-runs";
import { RemoteRuns, remoteSettings } from "../transports/remote-runs";
import type { SessionContext } from "./session-context";
import { sessionHost } from "./session-host";
import { SessionStores } from "../store/session-stores";
import { SessionTools } from "./session-tools";

/** A session's parts, built once its schema exists. */
export interface Parts {
  stores: SessionStores;
  ctx: SessionContext;
  driver: TurnDriver<SessionHost>;
  stream: EventStream;
  runs: OneShotRuns;
  oneShot: OneShotChild;
  children: ContinuableParent;
  self: ContinuableChild;
  delivery: Delivery;
  remote: RemoteRuns;
  acp: AcpRuns;
}

/**
 * Wires a session object's parts over its (migrated) storage: the stores, the shared context, the
 * turn driver and its turn-end hooks, delivery (which part applies which envelope) and the remote
 * and ACP transports. `kick` starts the object's drive loop without waiting.
 */
export function assembleParts(state: DurableObjectState, env: Env, kick: () => void): Parts {
  const stores = new SessionStores(state.storage);
  const stream = new EventStream(state, stores.log);
  stores.stream = stream;
  const registry = builtinTools();
  const tools = new SessionTools(registry, () => registryStub(env).list());
  const header = (): SessionHeader | undefined => stores.header.get();
  const ctx: SessionContext = {
    stores,
    header,
    driver: () => driver,
    tools: registry,
    session: (id, locationHint) => sessionStub(env, id, locationHint),
    provider: (name) => registryStub(env).resolve(name),
    modelSettings: () => modelSettings(env),
    limits: { depthCap: env.MAX_DEPTH_CAP, childCap: env.MAX_CHILDREN_PER_SESSION },
    remote: remoteSettings(env),
    kick,
  };
  const remote = new RemoteRuns(ctx, (envelope) => delivery.deliver(envelope));
  const callbacks = new CallbackSender(ctx);
  const acp = new AcpRuns(ctx, (envelope) => delivery.deliver(envelope));
  const runs = new OneShotRuns(ctx, remote, acp);
  const oneShot = new OneShotChild(ctx);
  const children = new ContinuableParent(ctx);
  const self = new ContinuableChild(ctx, children, runs);
  const host = sessionHost(ctx, runs, children, self);
  const model = (): string => header()?.options.model ?? env.DEFAULT_MODEL;
  const driver: TurnDriver<SessionHost> = new TurnDriver<SessionHost>({
    stores,
    get sessionId() {
      return header()?.id ?? "";
    },
    maxSteps: positiveInt(env.MAX_STEPS_PER_TURN, MAX_STEPS_PER_TURN),
    modelRoute: model,
    model: () => modelFor(model(), modelSettings(env)),
    system: () => header()?.options.persona,
    tools: () => tools.visible(header()),
    registry,
    host,
    inFlight: (keys) => stores.runs.inFlight(keys),
    onTurnEnd: (turn, _reason, turnStartSeq) => {
      runs.cancelForegroundOf(turn); // foreground children of an ended turn end with it
      const current = header();
      if (current?.oneShot) oneShot.onTurnEnd(current);
      if (current?.callback) callbacks.onTurnEnd(current, turnStartSeq);
    },
  });
  const delivery = new Delivery(
    ctx,
    (envelope, current) => {
      switch (envelope.kind) {
        case "run-result":
          runs.applyResult(envelope);
          return false;
        case "cancel-run":
          return oneShot.cancel(envelope, current);
        case "report":
          children.applyReport(envelope);
          return false;
        case "settled":
          children.applySettled(envelope);
          return false;
        case "callback":
          return false; // leaves the deployment over HTTP; never delivered to an object
      }
    },
    (envelope) => callbacks.send(envelope),
  );
  return { stores, ctx, driver, stream, runs, oneShot, children, self, delivery, remote, acp };
}

function modelSettings(env: Env): ModelSettings {
  const vars = env as Env & { OPENAI_API_KEY?: string };
  const settings: ModelSettings = { defaultModel: vars.DEFAULT_MODEL, openAiBaseUrl: vars.OPENAI_BASE_URL };
  if (vars.OPENAI_API_KEY) settings.openAiApiKey = vars.OPENAI_API_KEY;
  const ai = vars.AI;
  if (ai) {
    // The binding's overloads are keyed by literal model names; a model route names its model at
    // run time (the service checks it), so the adapter calls the untyped form.
    const run = ai.run.bind(ai) as NonNullable<ModelSettings["ai"]>["run"];
    settings.ai = { run };
  }
  return settings;
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
