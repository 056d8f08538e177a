import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Runner } from "./harness";
import { ADMIN, advanceClock, bounded, probe, sleep, workerFetch } from "./objects";

/**
 * Rounds of the drain (five mocked minutes each) with alarms firing and nothing moving after which
 * it counts as quiet: long enough for a parent's watchdog at its longest interval to look twice.
 */
const ARMED_STABLE_ROUNDS = 12;

/**
 * Fires every owed alarm of every listed object until no alarm is armed and nothing moved for a
 * few rounds, or alarms fired for `ARMED_STABLE_ROUNDS` rounds and nothing moved (bounded). A
 * failed alarm is retried the way the platform would (alarm() again with a retry count),
 * condemned instances are evicted, and the roots are looked at as a polling client would.
 * Backoffs elapse on a mocked clock, `stepMs` per round.
 */
export async function drainObjects(
  runner: Runner,
  objects: () => Promise<DurableObjectId[]>,
  roots: () => readonly string[] = () => [],
  { rounds = 400, stepMs = 5 * 60_000 }: { rounds?: number; stepMs?: number } = {},
): Promise<boolean> {
  let stable = 0;
  let last = "";
  for (let round = 0; round < rounds; round++) {
    await runner.reap();
    const ids = await objects();
    const states = await Promise.all(ids.map((id) => probe(id)));
    const armed = ids.filter((_, i) => states[i]?.alarm !== null);
    const signature = states.map((s) => s?.signature ?? "?").join("|");
    if (signature === last) stable++;
    else {
      stable = 0;
      last = signature;
    }
    if (armed.length === 0 || stable > 0) {
      // a client waiting for its answers looks at its sessions now and then: a root's lost
      // alarm is repaired by that touch (a child's by its parent's watchdog)
      advanceClock(15_000);
      await Promise.all(roots().map((id) => look(id)));
    }
    if (armed.length === 0) {
      if (stable >= 2) return true;
      await sleep(10);
      continue;
    }
    // alarms fired round after round and nothing moved: what is left are periodic wake-ups (a
    // parent's watchdog over a child that waits for input), each fired several times already
    if (stable >= ARMED_STABLE_ROUNDS) return true;
    // alarms of different objects fire independently
    await Promise.all(armed.map((id) => fireAlarm(runner, id)));
    advanceClock(stepMs);
    if (round === rounds - 1) {
      const names = new Map(
        [...runner.ids].map(([ref, id]) => [env.SESSIONS.idFromName(id).toString(), ref]),
      );
      runner.notes.push(
        `still armed after the drain: ${armed.map((id) => names.get(id.toString()) ?? id.toString()).join(", ")}`,
      );
    }
  }
  return false;
}

/** Stubs are taken fresh for every call: an aborted instance breaks the stubs that reached it. */
async function fireAlarm(runner: Runner, id: DurableObjectId): Promise<void> {
  const lost = runner.losesAlarm(id);
  if (lost) {
    runner.fired.push({ kind: "lost-alarm", point: "alarm-delivery", scope: lost.scope, at: Date.now() });
    await bounded(
      runInDurableObject(env.SESSIONS.get(id), (_i: unknown, state: DurableObjectState) =>
        state.storage.deleteAlarm(),
      ),
      5_000,
    );
    return;
  }
  let error: unknown;
  try {
    const ran = await bounded(runDurableObjectAlarm(env.SESSIONS.get(id)), 10_000);
    if (ran) return;
    error = new Error("alarm did not finish in 10 s");
  } catch (e) {
    error = e;
  }
  // the platform retries a failed alarm with backoff, handing the handler its retry count
  runner.alarmErrors++;
  for (let retryCount = 1; retryCount <= 6; retryCount++) {
    await runner.reap();
    const retried = await bounded(
      runInDurableObject(env.SESSIONS.get(id), async (instance: unknown) => {
        const object = instance as { alarm(info: AlarmInvocationInfo): Promise<void> };
        await object.alarm({ isRetry: true, retryCount, scheduledTime: Date.now() });
        return true;
      }).catch((e: unknown) => {
        error = e;
        return false;
      }),
      10_000,
    );
    if (retried?.value) return;
    runner.alarmErrors++;
  }
  runner.notes.push(`alarm kept failing after 6 retries: ${String(error).slice(0, 120)}`);
}

/** `GET /v1/sessions/:id`, as a polling client does (not recorded: it changes nothing). */
export async function look(id: string): Promise<void> {
  const request = new Request(`http://example.com/v1/sessions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  await bounded(
    workerFetch(request).then((response) => response.text()),
    5_000,
  );
}
