import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { MessageDelivery } from "../contract/control";
import type { ChildEntry, DescendantEntry } from "../contract/listing";
import type { SessionHost } from "./host";
import { text, type Tool } from "./tools";

/**
 * The continuation control tools (semantics.md §6.3-6.5, §9.4): `send_message` (direct children only),
 * `interrupt_agent` (any descendant), `list_agents` (recall, not polling) and, inside continuable
 * children only, `report` (one edge up; never ends the turn, never a final answer).
 */

export const sendMessageTool: Tool<
  { subagent_id: string; message: string; delivery?: MessageDelivery | undefined },
  SessionHost
> = {
  name: "send_message",
  description:
    'Send a message to one of your subagents. delivery: "next-turn" (default) queues it as that subagent\'s next turn; ' +
    '"next-step" steers the work it is doing now (it reads the message before its next step, in the same turn); ' +
    '"interrupt" stops its current turn and makes this message its next turn. Returns no answer; a failure means it was not delivered.',
  schema: lazySchema(() =>
    z.strictObject({
      subagent_id: z.string().min(1).max(128),
      message: z.string().min(1).max(200_000),
      delivery: MessageDelivery.optional(),
    }),
  ),
  async run(args, ctx, host) {
    const delivery = args.delivery ?? "next-turn";
    const sent = await host.followup(
      args.subagent_id,
      { content: args.message, delivery, trace: ctx.trace },
      ctx.callKey,
    );
    return sent.ok ? text(DELIVERED[delivery](args.subagent_id)) : text(`Error: ${sent.message}`, true);
  },
};

/** What `send_message` answers for each delivery (the default's text is the contract's, semantics.md §6.3). */
const DELIVERED: Record<MessageDelivery, (id: string) => string> = {
  "next-turn": (id) => `message queued as the next turn for subagent ${id}`,
  "next-step": (id) => `message delivered to subagent ${id}: it reads it before its next step`,
  interrupt: (id) => `subagent ${id}'s current turn was stopped; this message is its next turn`,
};

export const interruptAgentTool: Tool<{ agent_id: string }, SessionHost> = {
  name: "interrupt_agent",
  description:
    "Stop the current turn of one of your descendants (its queued work waits for the next message).",
  schema: lazySchema(() => z.strictObject({ agent_id: z.string().min(1).max(128) })),
  async run(args, _ctx, host) {
    if (args.agent_id === host.sessionId) return text("Error: an agent cannot interrupt itself", true);
    const done = await host.interruptAgent(args.agent_id);
    return done.ok
      ? text(`interrupt requested for agent ${args.agent_id}`)
      : text(`Error: ${done.message}`, true);
  },
};

export const listAgentsTool: Tool<{ scope?: "children" | "descendants" | undefined }, SessionHost> = {
  name: "list_agents",
  description:
    "List your continuable subagents (for recall, not for polling: you are told when one settles). send_message reaches depth-1 entries only; deeper ones only interrupt_agent.",
  schema: lazySchema(() => z.strictObject({ scope: z.enum(["children", "descendants"]).optional() })),
  async run(args, _ctx, host) {
    const scope = args.scope ?? "children";
    const listed = await host.listAgents(scope);
    if (!listed.ok) return text(`Error: ${listed.message}`, true);
    return text(renderAgents(listed.value, scope === "descendants"));
  },
};

export function renderAgents(entries: readonly (ChildEntry | DescendantEntry)[], withPlace: boolean): string {
  const lines: string[] = [];
  for (const e of entries) {
    const place = withPlace && "parentId" in e ? ` parent=${e.parentId} depth=${e.depth}` : "";
    if (e.kind === "diagnostic") lines.push(`${e.id} [diagnostic: ${e.reason}]${place}`);
    else if (e.mode === "continuable") {
      const status = e.activity === "running" ? (e.status === "running" ? "running" : "idle") : "ready";
      lines.push(`${e.id} [${status}]${place} — ${e.label ?? ""}`);
    }
  }
  return lines.length > 0 ? lines.join("\n") : "(no subagents)";
}

export const reportTool: Tool<{ output: string }, SessionHost> = {
  name: "report",
  description:
    "Deliver a self-contained result to the agent that started you, before you finish. Reporting never ends your turn.",
  schema: lazySchema(() => z.strictObject({ output: z.string().min(1).max(200_000) })),
  async run(args, ctx, host) {
    const sent = await host.report({ text: args.output, trace: ctx.trace }, ctx.callKey);
    return sent.ok
      ? text(`report accepted by the agent that started you as message ${sent.value.messageId}`)
      : text(`Error: ${sent.message}`, true);
  },
};
