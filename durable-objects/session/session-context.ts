import type { SessionHost } from "../../src/agent/host";
import type { ModelRoutes } from "../../src/agent/model-provider";
import type { ToolCatalog } from "../../src/agent/tool-source";
import type { TurnControl } from "../../src/agent/turn-control";
import type { SessionHeader } from "../../src/contract/session";
import type { Remote, SessionRpc } from "../../src/contract/session-api";
import type { LocationHint } from "../../src/core/placement";
import type { ProviderRecord } from "../../src/providers/catalog";
import type { SessionStores } from "../store/session-stores";

/**
 * What the parts of a session object share, and their only way to each other: its stores, its
 * turn control, its way to other objects and to the registry, and `kick` (run the drive loop).
 */
export interface SessionContext {
  stores: SessionStores;
  header(): SessionHeader | undefined;
  /** The session's turn driver, as far as parts may steer it. */
  turns: TurnControl;
  /** Every tool source of the session, for the tools its model sees and tool filters. */
  tools: ToolCatalog<SessionHost>;
  /** A session's object; the location hint matters only to the call that creates it. */
  session(id: string, locationHint?: LocationHint): Remote<SessionRpc>;
  /**
   * The provider `name` if this session may start children through it (its tenant's, and named by
   * its `providers` option if it has one); undefined, exactly as for an unknown name, otherwise.
   */
  provider(name: string): Promise<ProviderRecord | undefined>;
  /** The model routes this deployment serves. */
  models: ModelRoutes;
  /** The model of a session that names none (DEFAULT_MODEL, else `scripted`). */
  defaultModel: string;
  /**
   * The deployment's limits as its vars give them (absent or malformed: the default, where each is
   * read): MAX_DEPTH_CAP, MAX_CHILDREN_PER_SESSION, and the quotas (src/core/quotas.ts)
   * MAX_SESSIONS_PER_TREE, MAX_PENDING_MESSAGES and MAX_LOG_BYTES.
   */
  limits: {
    depthCap: string | undefined;
    childCap: string | undefined;
    treeCap: string | undefined;
    inboxCap: string | undefined;
    logCap: string | undefined;
  };
  /** Remote delegation: this deployment's public URL (callbacks; absent: polling only) and deadline. */
  remoteSettings: { publicUrl: string | undefined; deadlineMs: number };
  /** Runs the drive loop without waiting (steps, outbox, repairs, settlement). */
  kick(): void;
  /** A local child began working for this session: its watchdog (child-watch.ts) is armed. */
  childStarted(): void;
}
