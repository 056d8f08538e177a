/**
 * A Worker of its own that mounts the subagents runtime under /agents, next to its own routes.
 * Its agents get two tools over a KV namespace (a note store) and a model route of its own
 * ("shout", which answers in capitals without any network).
 */
import { createSubagents, defineTool, type ModelClient } from "subagents-edge/worker";
import { z } from "zod";

const saveNote = defineTool({
  name: "save_note",
  description: "Saves a note under a title (overwrites a note of the same title).",
  input: z.object({ title: z.string().min(1).max(100), text: z.string().max(10_000) }),
  async run({ title, text }, { env, sessionId, callKey }) {
    // A crash may run this call again with the same callKey: writing the same value twice is
    // harmless here, and the key records which call wrote the note.
    await env.NOTES.put(`note:${title}`, text, { metadata: { sessionId, callKey } });
    return `saved "${title}"`;
  },
});

const readNote = defineTool({
  name: "read_note",
  description: "Reads the note with this title.",
  input: z.object({ title: z.string().min(1).max(100) }),
  async run({ title }, { env }) {
    const text = await env.NOTES.get(`note:${title}`);
    return text === null ? { content: `no note "${title}"`, isError: true } : text;
  },
});

/** A model of this Worker's own: the newest user text in capitals (offline, deterministic). */
const shout = (): ModelClient => ({
  async generate(request) {
    const last = request.turn.findLast((m) => m.role === "user");
    const text = last?.role === "user" ? last.content.map((b) => b.text).join("") : "";
    return { content: [{ type: "text", text: text.toUpperCase() }], toolCalls: [], stopReason: "end" };
  },
});

const subagents = createSubagents<Env>({
  basePath: "/agents",
  tools: [saveNote, readNote],
  models: { shout },
});

export const { SessionObject, RegistryObject } = subagents;
// `wrangler types` names the classes' instance types in Env's Durable Object namespaces.
export type SessionObject = InstanceType<typeof SessionObject>;
export type RegistryObject = InstanceType<typeof RegistryObject>;

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/") return new Response("notes-agent: the agents live under /agents/\n");
    if (url.pathname === "/notes") {
      const list = await env.NOTES.list({ prefix: "note:" });
      return Response.json(list.keys.map((k) => k.name.slice("note:".length)));
    }
    return subagents.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
