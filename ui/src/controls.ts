import type { Content, MessageDelivery, ProviderInfo, SubagentsClient } from "../../src/client";
import { type DeleteDeps, deleteControl } from "./delete-session";
import { field, h, replace } from "./dom";
import { dateTime, shortId } from "./format";
import { attempt, clearError, note } from "./notice";
import type { TreeNode } from "./tree";

/**
 * Controls for the selected session: send a message (a top-level session) or follow up (a child,
 * through its parent), either one for the next turn, steering the running turn (`next-step`) or
 * interrupting and replacing it, and a message optionally held until a time (`notBefore`);
 * interrupt, drain, delete (delete-session.ts), and start a one-shot or continuable child with any
 * provider. Every action reports its failure in the error banner with the server's code.
 */

export interface ControlsDeps extends DeleteDeps {
  client(): SubagentsClient | undefined;
  selected(): TreeNode | undefined;
  providers(): ProviderInfo[];
  /** Something changed: re-read the tree now. */
  changed(): void;
}

/** The composer's delivery choices: the API's `delivery`, in words. */
const DELIVERIES: { value: MessageDelivery; label: string; title: string }[] = [
  { value: "next-turn", label: "next turn", title: "Queued: a later turn reads it (the default)" },
  {
    value: "next-step",
    label: "steer the running turn",
    title: "The running turn's model reads it before its next step (an idle session starts a turn)",
  },
  {
    value: "interrupt",
    label: "interrupt and replace it",
    title: "The running turn ends aborted and this message is the next turn",
  },
];

const EXAMPLES: Record<string, string> = {
  echo: "hello",
  slow: JSON.stringify({ script: [{ think: 10_000 }, { say: "slow" }] }),
  report: JSON.stringify({
    script: [{ call: [{ tool: "report", args: { output: "half way" } }] }, { say: "42" }],
  }),
  fail: JSON.stringify({ script: [{ fail: "something broke" }] }),
};

export class Controls {
  readonly #root: HTMLElement;
  readonly #deps: ControlsDeps;
  #startOpen = false;

  constructor(root: HTMLElement, deps: ControlsDeps) {
    this.#root = root;
    this.#deps = deps;
  }

  /** Rebuilds the controls for the current selection (keeps typed text when the target is the same). */
  render(): void {
    const node = this.#deps.selected();
    if (!node) {
      this.#root.replaceChildren();
      delete this.#root.dataset.for;
      return;
    }
    const key = `${node.id}:${node.parentId ?? ""}`;
    if (this.#root.dataset.for === key) {
      this.#providers();
      return;
    }
    this.#root.dataset.for = key;
    const child = node.parentId !== null;
    replace(this.#root, this.#messageForm(node, child), this.#actions(node, child), this.#startForm(node));
    this.#providers();
  }

  #messageForm(node: TreeNode, child: boolean): HTMLFormElement {
    const form = h(
      "form",
      { class: "message-form", "data-form": "message" },
      h("textarea", {
        name: "content",
        rows: 2,
        required: true,
        placeholder: child
          ? "Follow-up for this child (Enter sends)"
          : "Message (Enter sends, Shift+Enter: new line)",
        "aria-label": child ? "Follow-up" : "Message",
      }),
      h(
        "button",
        { type: "submit", "data-action": child ? "follow-up" : "send" },
        child ? "Follow up" : "Send",
      ),
      h(
        "div",
        { class: "message-options" },
        h(
          "label",
          {},
          "Delivery ",
          h(
            "select",
            { name: "delivery" },
            DELIVERIES.map((d) => h("option", { value: d.value, title: d.title }, d.label)),
          ),
        ),
        // a follow-up goes through the parent's route, which takes no time to wait for
        child
          ? null
          : h(
              "label",
              { title: "Held until then (your local time); empty: now" },
              "Deliver at ",
              h("input", { name: "notBefore", type: "datetime-local", step: 1 }),
            ),
      ),
    );
    const textarea = form.querySelector("textarea")!;
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const content = field(form, "content");
      if (!content) return;
      const chosen = field(form, "delivery") as MessageDelivery;
      const delivery = chosen === "next-turn" ? undefined : chosen;
      const at = field(form, "notBefore");
      const time = at ? new Date(at).getTime() : Number.NaN;
      const notBefore = Number.isFinite(time) ? time : undefined;
      void this.#run(child ? "follow-up" : "sending the message", async (client) => {
        if (child) await client.followUp(node.parentId!, node.id, content, { delivery });
        else await client.sendMessage(node.id, content, { delivery, notBefore });
        form.reset();
        const how =
          delivery === "next-step"
            ? " to steer the running turn"
            : delivery === "interrupt"
              ? " in place of the running turn"
              : "";
        note(
          child
            ? `follow-up sent to ${shortId(node.id)}${how}`
            : notBefore !== undefined && notBefore > Date.now()
              ? `message held until ${dateTime(notBefore)}${how}`
              : `message sent${how}`,
        );
      });
    });
    return form;
  }

  #actions(node: TreeNode, child: boolean): HTMLElement {
    return h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          type: "button",
          class: "secondary",
          "data-action": "interrupt",
          title: child ? "The parent interrupts this child" : "Abort the open turn",
          onclick: () =>
            void this.#run("interrupting", async (client) => {
              if (child) await client.interruptChild(node.parentId!, node.id);
              else await client.interrupt(node.id);
              note(`interrupt sent to ${shortId(node.id)}`);
            }),
        },
        "Interrupt",
      ),
      h(
        "button",
        {
          type: "button",
          class: "secondary",
          "data-action": "drain",
          title: child ? "Settle this child (its parent drains it)" : "Settle every descendant",
          onclick: () =>
            void this.#run("draining", async (client) => {
              const drained = child
                ? await client.drain(node.parentId!, [node.id])
                : await client.drain(node.id);
              note(`drained ${drained.length} session${drained.length === 1 ? "" : "s"}`);
            }),
        },
        child ? "Drain" : "Drain all",
      ),
      deleteControl(() => {
        const now = this.#deps.selected();
        return now?.id === node.id ? now : node;
      }, this.#deps),
    );
  }

  #startForm(node: TreeNode): HTMLElement {
    const form = h(
      "form",
      { class: "start-form", "data-form": "start" },
      h(
        "div",
        { class: "row" },
        h("label", {}, "Provider ", h("select", { name: "provider", required: true })),
        h(
          "label",
          {},
          "Mode ",
          h(
            "select",
            { name: "mode" },
            h("option", { value: "continuable" }, "continuable"),
            h("option", { value: "one-shot" }, "one-shot"),
          ),
        ),
        h("label", {}, "Label ", h("input", { name: "label", placeholder: "worker", maxlength: 200 })),
        h("label", {}, "Model ", h("input", { name: "model", placeholder: "(default)", maxlength: 200 })),
      ),
      h(
        "label",
        { class: "prompt" },
        "Prompt ",
        h(
          "select",
          { name: "example", "aria-label": "Example prompts" },
          h("option", { value: "" }, "examples…"),
          Object.keys(EXAMPLES).map((k) => h("option", { value: k }, k)),
        ),
        h("textarea", {
          name: "prompt",
          rows: 3,
          required: true,
          placeholder: 'Prompt, or {"script": [...]}',
        }),
      ),
      h("button", { type: "submit", "data-action": "start-child" }, "Start subagent"),
    );
    const example = form.elements.namedItem("example") as HTMLSelectElement;
    example.addEventListener("change", () => {
      const prompt = form.elements.namedItem("prompt") as HTMLTextAreaElement;
      prompt.value = EXAMPLES[example.value] ?? prompt.value;
      example.value = "";
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.#run("starting a subagent", (client) => this.#start(client, form, node));
    });
    const details = h(
      "details",
      { class: "start", open: this.#startOpen },
      h("summary", {}, "Start a subagent"),
      form,
    );
    details.addEventListener("toggle", () => {
      this.#startOpen = details.open;
    });
    return details;
  }

  async #start(client: SubagentsClient, form: HTMLFormElement, node: TreeNode): Promise<void> {
    const provider = field(form, "provider");
    const prompt: Content = field(form, "prompt");
    const label = field(form, "label");
    const model = field(form, "model");
    const common = { provider, prompt, ...(model ? { model } : {}) };
    if (field(form, "mode") === "one-shot") {
      const run = await client.startOneShot(node.id, { ...common, ...(label ? { label } : {}) });
      note(`one-shot run ${shortId(run.runId)} started (child ${shortId(run.id)})`);
      void client.waitForRun(node.id, run.runId, { timeoutMs: 10 * 60_000 }).then(
        (view) => {
          note(`run ${shortId(run.runId)} settled: ${view.result?.stopReason ?? "?"}`);
          this.#deps.changed();
        },
        () => {},
      );
    } else {
      const started = await client.startContinuable(node.id, { ...common, label: label || "worker" });
      note(`continuable child ${shortId(started.childId)} started`);
    }
    for (const name of ["prompt", "label", "model"])
      (form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement).value = "";
  }

  #providers(): void {
    const select = this.#root.querySelector<HTMLSelectElement>("select[name=provider]");
    if (!select) return;
    const names = this.#deps.providers().map((p) => p.name);
    const current = [...select.options].map((o) => o.value);
    if (names.join() === current.join()) return;
    const chosen = select.value;
    replace(
      select,
      this.#deps
        .providers()
        .map((p) =>
          h(
            "option",
            { value: p.name },
            `${p.name}${p.local ? "" : " (remote)"}${p.continuable ? "" : " · one-shot only"}`,
          ),
        ),
    );
    if (names.includes(chosen)) select.value = chosen;
  }

  async #run(context: string, action: (client: SubagentsClient) => Promise<void>): Promise<void> {
    const client = this.#deps.client();
    if (!client) return;
    const ok = await attempt(context, () => action(client));
    if (ok) clearError();
    this.#deps.changed();
  }
}
