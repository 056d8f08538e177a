import { env } from "cloudflare:workers";
import { expect } from "vitest";

/**
 * The fake OpenAI-compatible server (test/setup/openai-server.ts, started by vitest's globalSetup
 * in Node; the Worker reaches it at OPENAI_BASE_URL) records every request it answers. These read
 * them back: what system prompt and which tools a session's model call carried.
 */

/** One request the fake server answered. */
export interface FakeRequest {
  index: number;
  path: string;
  /** Whether the Authorization header carried the expected key ("ok", "missing", "wrong"). */
  auth: string;
  status: number;
  /** When the request arrived (epoch ms). */
  at: number;
  body: {
    model: string;
    messages: { role: string; content: unknown; [key: string]: unknown }[];
    tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[];
    stream?: boolean;
    temperature?: number;
    max_tokens?: number;
  };
}

/** A URL of the fake server. */
export function fakeOpenAiUrl(path: string): string {
  return new URL(path, env.OPENAI_BASE_URL).toString();
}

/** The requests the fake server answered, from index `since` on, and how many it answered in all. */
export async function fakeRequests(since = 0): Promise<{ count: number; requests: FakeRequest[] }> {
  const res = await fetch(fakeOpenAiUrl(`/__requests?since=${since}`));
  expect(res.status).toBe(200);
  return res.json();
}

/** The requests whose messages mention `marker` (a unique text the test put in a prompt). */
export async function fakeRequestsMentioning(marker: string): Promise<FakeRequest[]> {
  const { requests } = await fakeRequests();
  return requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
}

/** The names of the tools a request offered the model. */
export function toolNames(request: FakeRequest): string[] {
  return (request.body.tools ?? []).map((t) => t.function.name);
}
