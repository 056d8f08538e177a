import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { SessionHeader } from "../../src/contract/session";
import type { LoopState } from "../../src/core/turn-plan";

/** Every table of one session object, read through SQL after the drain. */

export interface LogEvent {
  seq: number;
  type: string;
  at: number;
  data: any;
}

export interface InboxRow {
  messageId: string;
  position: number;
  lane: string;
  waking: boolean;
  source: any;
  content: any;
  state: "pending" | "claimed" | "discarded";
  idempotencyKey: string | null;
}

export interface RunRowDump {
  runId: string;
  childId: string;
  state: string;
  callKey: string | null;
  taskId: string | null;
  cancelRequested: boolean;
  result: any;
}

export interface ChildRowDump {
  childId: string;
  mode: string;
  label: string | null;
  state: string;
  epochRunId: string | null;
}

export interface OutboxDump {
  id: string;
  target: string;
  kind: string;
  envelope: any;
  attempts: number;
  deliveredAt: number | null;
  deadAt: number | null;
  lastError: string | null;
}

export interface Snapshot {
  /** The Durable Object id (hex). */
  objectId: string;
  header: SessionHeader | null;
  events: LogEvent[];
  inbox: InboxRow[];
  loop: LoopState | null;
  runs: RunRowDump[];
  children: ChildRowDump[];
  outbox: OutboxDump[];
  seen: string[];
  activation: { epoch: number; runId: string } | null;
  epochs: { runId: string; childId: string; state: string; pendingNotice: boolean }[];
  flags: Record<string, string>;
  /** Cancels that outran their one-shot child's creation: run id -> the parent that sent it. */
  cancelledRuns: Record<string, string>;
  alarm: number | null;
  /** The receiver's per-link order: the next link sequence it expects from each sender. */
  links: { sender: string; nextSeq: number }[];
  /** Far-side and ACP transport rows (protocol, phase; their credentials are not read). */
  transports: { table: "remote_runs" | "acp_runs"; runId: string; phase: string }[];
  /** The schema version the object migrated to (`meta`). */
  schemaVersion: number | null;
}

export async function snapshot(objectId: DurableObjectId): Promise<Snapshot> {
  return runInDurableObject(
    env.SESSIONS.get(objectId),
    async (_instance: unknown, state: DurableObjectState): Promise<Snapshot> => {
      const sql = state.storage.sql;
      const tables = new Set(
        sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
          .toArray()
          .map((r) => r.name),
      );
      const rows = <T extends Record<string, SqlStorageValue>>(table: string, query: string): T[] =>
        tables.has(table) ? sql.exec<T>(query).toArray() : [];
      const json = (text: SqlStorageValue | undefined): any =>
        typeof text === "string" ? JSON.parse(text) : null;
      const header = rows<{ body: string }>("header", "SELECT body FROM header")[0];
      const loop = rows<{ body: string }>("loop", "SELECT body FROM loop")[0];
      const activation = rows<{ epoch: number; run_id: string }>(
        "activation",
        "SELECT epoch, run_id FROM activation",
      )[0];
      return {
        objectId: objectId.toString(),
        header: header ? json(header.body) : null,
        events: rows<{ seq: number; type: string; at: number; data: string }>(
          "events",
          "SELECT seq, type, at, data FROM events ORDER BY seq",
        ).map((r) => ({ seq: r.seq, type: r.type, at: r.at, data: json(r.data) })),
        inbox: rows<Record<string, SqlStorageValue>>("inbox", "SELECT * FROM inbox ORDER BY position").map(
          (r) => ({
            messageId: String(r.message_id),
            position: Number(r.position),
            lane: String(r.lane),
            waking: r.waking === 1,
            source: json(r.source),
            content: json(r.content),
            state: r.state as InboxRow["state"],
            idempotencyKey: r.idempotency_key === null ? null : String(r.idempotency_key),
          }),
        ),
        loop: loop ? json(loop.body) : null,
        runs: rows<Record<string, SqlStorageValue>>("runs", "SELECT * FROM runs ORDER BY created_at").map(
          (r) => ({
            runId: String(r.run_id),
            childId: String(r.child_id),
            state: String(r.state),
            callKey: r.call_key === null ? null : String(r.call_key),
            taskId: r.task_id === null ? null : String(r.task_id),
            cancelRequested: r.cancel_requested === 1,
            result: json(r.result),
          }),
        ),
        children: rows<Record<string, SqlStorageValue>>("children", "SELECT * FROM children").map((r) => ({
          childId: String(r.child_id),
          mode: String(r.mode),
          label: r.label === null ? null : String(r.label),
          state: String(r.state),
          epochRunId: r.epoch_run_id === null || r.epoch_run_id === undefined ? null : String(r.epoch_run_id),
        })),
        outbox: rows<Record<string, SqlStorageValue>>("outbox", "SELECT * FROM outbox ORDER BY position").map(
          (r) => ({
            id: String(r.id),
            target: String(r.target),
            kind: String(r.kind),
            envelope: json(r.payload),
            attempts: Number(r.attempts),
            deliveredAt: r.delivered_at === null ? null : Number(r.delivered_at),
            deadAt: r.dead_at === null ? null : Number(r.dead_at),
            lastError: r.last_error === null ? null : String(r.last_error),
          }),
        ),
        seen: rows<{ envelope_id: string }>("seen", "SELECT envelope_id FROM seen").map((r) => r.envelope_id),
        activation: activation ? { epoch: activation.epoch, runId: activation.run_id } : null,
        epochs: rows<{ run_id: string; child_id: string; state: string; pending_notice: string | null }>(
          "epochs",
          "SELECT run_id, child_id, state, pending_notice FROM epochs",
        ).map((r) => ({
          runId: r.run_id,
          childId: r.child_id,
          state: r.state,
          pendingNotice: r.pending_notice !== null,
        })),
        flags: Object.fromEntries(
          rows<{ name: string; value: string }>("flags", "SELECT name, value FROM flags").map((r) => [
            r.name,
            r.value,
          ]),
        ),
        cancelledRuns: Object.fromEntries(
          rows<{ run_id: string; parent: string }>(
            "cancelled_runs",
            "SELECT run_id, parent FROM cancelled_runs",
          ).map((r) => [r.run_id, r.parent]),
        ),
        alarm: await state.storage.getAlarm(),
        links: rows<{ sender: string; next_seq: number }>("links", "SELECT sender, next_seq FROM links").map(
          (r) => ({ sender: r.sender, nextSeq: r.next_seq }),
        ),
        transports: [
          ...rows<{ run_id: string; phase: string }>(
            "remote_runs",
            "SELECT run_id, phase FROM remote_runs",
          ).map((r) => ({ table: "remote_runs" as const, runId: r.run_id, phase: r.phase })),
          ...rows<{ run_id: string }>("acp_runs", "SELECT run_id FROM acp_runs").map((r) => ({
            table: "acp_runs" as const,
            runId: r.run_id,
            phase: "-",
          })),
        ],
        schemaVersion: (() => {
          const row = rows<{ value: string }>(
            "meta",
            "SELECT value FROM meta WHERE key = 'schema_version'",
          )[0];
          return row ? Number(row.value) : null;
        })(),
      };
    },
  );
}
