import type { SessionHost } from "../../src/agent/host";
import type { ModelSettings } from "../../src/agent/model-router";
import type { ToolRegistry } from "../../src/agent/tools";
import type { TurnDriver } from "../../src/agent/turn-driver";
import type { SessionHeader } from "../../src/contract/session";
import type { SessionRpc } from "../../src/contract/session-api";
import type { LocationHint } from "../../src/core/placement";
import type { ProviderRecord } from "../../src/providers/catalog";
import type { SessionStores } from "../store/session-stores";

/** What the parts of a session object share: its stores, its driver and its way to other objects. */
export interface SessionContext {
  stores: SessionStores;
  header(): SessionHeader | undefined;
  driver(): TurnDriver<SessionHost>;
  tools: ToolRegistry<SessionHost>;
  /** A session's object; the location hint matters only to the call that creates it. */
  session(id: string, locationHint?: LocationHint): SessionRpc;
  provider(name: string): Promise<ProviderRecord | undefined>;
  modelSettings(): ModelSettings;
  limits: { depthCap: string | undefined; childCap: string | undefined };
  /** Remote delegation: this deployment's public URL (callbacks; absent: polling only) and deadline. */
  remote: { publicUrl: string | undefined; deadlineMs: number };
  /** Starts the driver without waiting (steps, outbox, settlement). */
  kick(): void;
}
