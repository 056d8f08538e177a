import { Role, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { connect, texts } from "../../support/a2a-client";
import { ADMIN, createSession, sendMessage, workerFetch } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";

/**
 * A task is its whole session, but an answer about it is bounded (README "Agents of other
 * vendors: A2A"): `GetTask` and each task of `ListTasks` hold the newest history messages that
 * `historyLength` asks for (100 at most) and the newest results, within 4 MiB for the answer; a
 * text cut ends in a marker and `metadata["subagents.omitted"]` counts what was left out. The
 * attack: a session of about 11 MB of conversation, whose task was one 11 MB answer.
 */

const PAGE_BYTES = 4 * 1024 * 1024;
const TURNS = 22;
/** Each message is echoed whole by the scripted model: about 2 × 240 KiB of log per turn. */
const MESSAGE_CHARS = 240 * 1024;

/** One raw JSON-RPC call (A2A 1.0): its size in bytes as sent, and its result. */
async function rpc(method: string, params: unknown): Promise<{ bytes: number; result: any }> {
  const response = await workerFetch(
    new Request("http://example.com/v1/a2a", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}`, "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    }),
  );
  expect(response.status).toBe(200);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const body = JSON.parse(new TextDecoder().decode(bytes));
  expect(body.error).toBeUndefined();
  return { bytes: bytes.length, result: body.result };
}

async function longSession(): Promise<string> {
  // a window wide enough that the echoes reach the log whole
  const { id } = await createSession({ contextWindow: 1_000_000 });
  for (let turn = 0; turn < TURNS; turn++) await sendMessage(id, `${turn} ${"m".repeat(MESSAGE_CHARS)}`);
  await waitForTurnEnds(id, TURNS, 240_000);
  return id;
}

describe("the task of a long session", () => {
  it("answers GetTask and ListTasks in at most 4 MiB, newest first, and says what it left out", async () => {
    const id = await longSession();

    const whole = await rpc("GetTask", { id });
    expect(whole.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    const task = whole.result;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    // the newest messages and results, in order; what did not fit is counted
    expect(task.history.at(-1).parts[0].text.startsWith(`echo: ${TURNS - 1} `)).toBe(true);
    expect(task.artifacts.at(-1).artifactId).toBe(`turn-${TURNS}`);
    const omitted = task.metadata["subagents.omitted"];
    expect(omitted.history + task.history.length).toBe(2 * TURNS);
    expect(omitted.artifacts + task.artifacts.length).toBe(TURNS);
    expect(omitted.history).toBeGreaterThan(0);

    const listed = await rpc("ListTasks", { pageSize: 50, historyLength: 100, includeArtifacts: true });
    expect(listed.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    const mine = listed.result.tasks.find((t: any) => t.id === id);
    expect(mine.status.state).toBe("TASK_STATE_COMPLETED");
    expect(mine.metadata["subagents.omitted"].history).toBeGreaterThan(0);
  }, 300_000);

  it("follows historyLength through the official client: the newest n messages, none for 0", async () => {
    const id = await longSession();
    const client = await connect();
    const three = await client.getTask({ tenant: "", id, historyLength: 3 });
    expect(three.history.map((m) => m.role)).toEqual([Role.ROLE_AGENT, Role.ROLE_USER, Role.ROLE_AGENT]);
    expect(texts(three.history.at(-1)!.parts).startsWith(`echo: ${TURNS - 1} `)).toBe(true);
    expect(three.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await client.getTask({ tenant: "", id, historyLength: 0 })).history).toEqual([]);
  }, 300_000);
});
