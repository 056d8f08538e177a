import type { PermissionRequest } from "./acp-protocol";

/**
 * What one ACP run (acp-client.ts) is given: the agent it reaches, how long each of its phases may
 * take, and the hooks the session that owns it listens with (the agent's session id, its
 * permission requests), with the SDK it loads on its first use.
 */

/** The official ACP SDK, loaded by the first run (its schemas cost a Worker's start that never speaks ACP). */
export type AcpSdk = typeof import("@agentclientprotocol/sdk");

export interface AcpTarget {
  url: string;
  token: string | null;
  /** Everything that must never appear in a diagnostic (the token). */
  secrets: readonly string[];
}

export interface AcpTimeouts {
  /** The upgrade, `initialize` and `session/new` each get this long. */
  setupMs: number;
  /** The prompt may run this long before the run ends as `error`. */
  promptMs: number;
  /** After `session/cancel`, the agent's answer is awaited this long. */
  cancelGraceMs: number;
}

export const ACP_TIMEOUTS: AcpTimeouts = { setupMs: 15_000, promptMs: 30 * 60_000, cancelGraceMs: 5_000 };

export interface AcpRunOptions {
  timeouts?: AcpTimeouts;
  /**
   * Hears the agent's session id once `session/new` answered, before the prompt goes out, and
   * whether the agent offers `session/load` (so the run can be resumed there).
   */
  onSession?: (sessionId: string, canLoad: boolean) => void;
  /** Resume this session of the agent (`session/load`) instead of starting a new one. */
  resume?: string;
  /**
   * The agent asks permission for a tool call: resolves the option to answer with, or undefined
   * to answer `cancelled`.
   */
  onPermission?: (request: PermissionRequest) => Promise<string | undefined>;
  /** The span that started the run (W3C `traceparent`), sent in the prompt's `_meta`. */
  traceparent?: string;
  /** Loads the ACP SDK (the deployment's `acp` protocol); a failure fails the run as unreachable. */
  sdk: () => Promise<AcpSdk>;
}
