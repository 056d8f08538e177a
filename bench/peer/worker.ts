/**
 * The benchmark's peer (bench/README.md, "Peer rows"): the delegations of the spawn and fan-out
 * rows written with Cloudflare's Agents SDK, the way its documentation starts and calls an agent
 * (`getAgentByName`, then a method over RPC). Each child is a brand-new agent (a random name)
 * that writes one row with the SDK's `this.sql` and answers; the parent records the answer.
 * Bundled and run by bench/run.mjs in workerd beside the runtime's benchmark Worker; its package
 * (`agents`) is installed into bench/peer by the bench, never by the product's `npm ci`.
 */
import { Agent, getAgentByName } from "agents";

interface PeerEnv {
  PEER_PARENT: DurableObjectNamespace<PeerParent>;
  PEER_CHILD: DurableObjectNamespace<PeerChild>;
}

/** A fan-out is bounded like the floor's. */
const MAX_FANOUT = 1_000;

export class PeerChild extends Agent<PeerEnv> {
  /** One durable write, then the answer. */
  async work(task: string): Promise<string> {
    this.sql`CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`;
    this.sql`INSERT INTO rows (value) VALUES (${task})`;
    return `done: ${task}`;
  }
}

export class PeerParent extends Agent<PeerEnv> {
  /** A brand-new child agent does its work and answers; the parent records the answer. */
  async spawn(task: string): Promise<string> {
    const answer = await this.#child(task);
    this.#record(answer);
    return answer;
  }

  /** `n` brand-new children at once; each answer is recorded as it arrives. */
  async fanout(n: number, task: string): Promise<number> {
    const count = Math.max(1, Math.min(MAX_FANOUT, Math.floor(n)));
    const answers = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const answer = await this.#child(`${task} #${i}`);
        this.#record(answer);
        return answer;
      }),
    );
    return answers.length;
  }

  async #child(task: string): Promise<string> {
    const child = await getAgentByName(this.env.PEER_CHILD, `child-${crypto.randomUUID()}`);
    return child.work(task);
  }

  #record(answer: string): void {
    this.sql`CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`;
    this.sql`INSERT INTO rows (value) VALUES (${answer})`;
  }
}

/** `POST /peer/spawn?key=<parent>` and `POST /peer/fanout?key=<parent>&n=<1..1000>`. */
export default {
  async fetch(request: Request, env: PeerEnv): Promise<Response> {
    const url = new URL(request.url);
    const parent = await getAgentByName(env.PEER_PARENT, url.searchParams.get("key") ?? "parent");
    if (request.method === "POST" && url.pathname === "/peer/spawn")
      return Response.json({ answer: await parent.spawn("x") });
    if (request.method === "POST" && url.pathname === "/peer/fanout") {
      const n = Number(url.searchParams.get("n") ?? "100");
      return Response.json({ children: await parent.fanout(n, "x") });
    }
    return Response.json({ error: { code: "NOT_FOUND", message: "no such peer route" } }, { status: 404 });
  },
} satisfies ExportedHandler<PeerEnv>;
