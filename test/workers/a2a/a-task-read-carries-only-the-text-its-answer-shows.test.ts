import { describe, expect, it } from "vitest";
import { agentCard } from "../../../src/a2a/agent-card";
import { SessionTaskHandler, type TaskSessions } from "../../../src/a2a/session-tasks";
import { fail, ok } from "../../../src/contract/errors";
import type { Caller } from "../../../src/contract/session";
import { createSession, sendMessage } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";
import { stub } from "../../support/objects";

/**
 * A task's read (GetTask, ListTasks) folds the whole log but carries out of the session's object
 * only the text its answer can show: a first read leaves every message's text in SQLite, a second
 * reads the kept messages. The answer is the one a read of the whole log gives, byte for byte,
 * also when the log's text is counted differently by SQLite (code points) than by the answer
 * (UTF-16). The attack: a session of about 48 MB of conversation in 240 kB messages of mixed
 * one-, two- and four-byte characters, read as tasks of every window; each read must carry less
 * than a quarter of what the whole log's read carries (a GetTask's fold keeps up to 4 MiB of
 * history and as much of results).
 */

const TURNS = 100;
/** Each message (240 kB: the API's body is 256 KiB at most) is echoed whole by the scripted model. */
const MESSAGE = "m é 😀 ".repeat(24_000);
const PAGE_BYTES = 256 * 1024;
const CALLER: Caller = { kind: "admin" };

/** The runtime's sessions as the A2A face reads them, counting the characters each read carries. */
function sessions(ids: string[], passText: boolean, carried: { chars: number }): TaskSessions {
  const refused = async () => fail("INVALID_REQUEST", "not used here");
  return {
    async events(id, after, waitMs, text) {
      const query = { after, limit: 500, maxBytes: PAGE_BYTES, ...(passText && text ? { text } : {}) };
      const page = await stub(id).events(CALLER, query, waitMs);
      carried.chars += JSON.stringify(page).length;
      return page;
    },
    list: async () => ok({ ids, next: null }),
    create: refused,
    send: refused,
    interrupt: refused,
    decide: refused,
  };
}

async function longSession(): Promise<string> {
  const { id } = await createSession({ contextWindow: 1_000_000 });
  for (let turn = 0; turn < TURNS; turn++) await sendMessage(id, `${turn} ${MESSAGE}`);
  await waitForTurnEnds(id, TURNS, 300_000);
  return id;
}

describe("a task's read", () => {
  it("answers as a read of the whole log does, byte for byte, carrying a quarter of its text at most", async () => {
    const id = await longSession();
    const card = agentCard("http://example.com", "test");
    const reads: [string, (h: SessionTaskHandler) => Promise<unknown>][] = [
      ["GetTask", (h) => h.getTask({ tenant: "", id })],
      ["GetTask historyLength 3", (h) => h.getTask({ tenant: "", id, historyLength: 3 })],
      ["GetTask historyLength 0", (h) => h.getTask({ tenant: "", id, historyLength: 0 })],
      ["ListTasks", (h) => h.listTasks({ tenant: "", pageSize: 20 } as never)],
      [
        "ListTasks of one, every message and artifact",
        (h) => h.listTasks({ tenant: "", pageSize: 1, historyLength: 100, includeArtifacts: true } as never),
      ],
    ];
    for (const [name, read] of reads) {
      const lean = { chars: 0 };
      const whole = { chars: 0 };
      const answer = JSON.stringify(await read(new SessionTaskHandler(card, sessions([id], true, lean))));
      const expected = JSON.stringify(await read(new SessionTaskHandler(card, sessions([id], false, whole))));
      expect(answer, name).toBe(expected);
      expect(whole.chars, name).toBeGreaterThan(2 * TURNS * MESSAGE.length);
      expect(lean.chars, `${name}: ${lean.chars} of ${whole.chars}`).toBeLessThan(whole.chars / 4);
    }
  }, 600_000);
});
