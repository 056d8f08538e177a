import type { Remote, SessionRpc } from "../../src/contract/session-api";
import type { RegistryRpc } from "../../src/contract/registry-api";
import type { LocationHint } from "../../src/contract/placement";
import type { DeploymentVars } from "./deployment-vars";

/**
 * The host port: everything a session or registry object needs of the machine it runs on, in the
 * project's own terms. The objects of durable-objects/ are written against these interfaces only;
 * an adapter turns a host into them (durable-objects/cloudflare/: a Durable Object's state,
 * storage, namespaces and hibernatable WebSockets). Nothing here names a Workers type, so the same
 * objects can run on any host that offers synchronous SQL and one alarm per object.
 */

/** A value SQLite stores and answers. */
export type SqlValue = ArrayBuffer | string | number | null;

/** The rows of one statement, read at once. */
export interface SqlCursor<Row> {
  toArray(): Row[];
  /** The one row the statement answers; throws when there is none or more than one. */
  one(): Row;
}

/** Synchronous SQL on the object's own database. */
export interface HostSql {
  exec<Row extends Record<string, SqlValue> = Record<string, SqlValue>>(
    query: string,
    ...bindings: unknown[]
  ): SqlCursor<Row>;
}

/** The object's durable storage: its database, transactions, its one alarm and erasure. */
export interface HostStorage {
  readonly sql: HostSql;
  /**
   * Runs `fn` as one transaction: all of its writes commit together or, when it throws, none
   * does. A call inside another is a nested transaction (a savepoint) that rolls back alone.
   */
  transactionSync<T>(fn: () => T): T;
  /** The time the alarm is set for (epoch milliseconds), or null when none is set. */
  getAlarm(): Promise<number | null>;
  /** Sets the one alarm (replacing any other): the host calls the object's `alarm` at `at` or soon after. */
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  /** Erases every row of the object. Whether the alarm goes with them is the host's: clear it first. */
  deleteAll(): Promise<void>;
}

/** What a WebSocket subscriber carries across the object's sleep (the host keeps it with the socket). */
export type SocketAttachment = Record<string, unknown>;

/** A server-side WebSocket the host holds for the object, surviving the object's sleep. */
export interface HostSocket {
  send(message: string): void;
  close(code?: number, reason?: string): void;
  attachment(): SocketAttachment | null;
  attach(value: SocketAttachment): void;
}

/**
 * WebSockets the host keeps open while the object sleeps (optional: a host without them serves
 * event streams over SSE only).
 */
export interface HostSockets {
  /**
   * Accepts a new WebSocket for the object: the server side, held by the host, and the 101
   * response that hands the client side to the caller (`protocol`: the subprotocol to answer).
   */
  accept(protocol: string | undefined): { socket: HostSocket; response: Response };
  /** Every socket of the object not yet closed (those accepted before a sleep included). */
  open(): HostSocket[];
  /** Answers the client's keepalive `ping` with `pong` without waking the object. */
  keepalive(ping: string, pong: string): void;
}

/**
 * The other objects of the deployment, addressed by name: the same name reaches the same object
 * from any object or Worker of the deployment. Calls on them cross to the other object (every
 * answer arrives later, arguments and answers are copied).
 */
export interface ObjectDirectory {
  /** The session `id`'s object; `hint`, where it should live, matters only to the call that creates it. */
  session(id: string, hint?: LocationHint): Remote<SessionRpc>;
  /** The deployment's one registry object (providers, the directory of top-level sessions). */
  registry(): Remote<RegistryRpc>;
  /** Names the registry: the same for every object of the deployment (a key for what they share in memory). */
  readonly registryKey: string;
}

/**
 * One object of this deployment, as it runs on its host. Start-up is gated: the host builds the
 * object's implementation (its `open`, awaited) before any call, alarm or socket event reaches it.
 */
export interface ObjectHost {
  /** The object's id on its host, the same at every start (on Workers, its Durable Object id in hex). */
  readonly id: string;
  readonly storage: HostStorage;
  /** Absent: the host keeps no sockets, and event streams are served over SSE only. */
  readonly sockets?: HostSockets;
  readonly objects: ObjectDirectory;
  readonly vars: DeploymentVars;
  /**
   * The host's own bindings (on Workers, the Worker's env), opaque to the objects: handed as they
   * are to the deployment's tools and models (src/platform/deployment.ts), which the user wrote.
   */
  readonly bindings: unknown;
}
