import type { Rng } from "./prng";
import type { ChildSpec, ModelChild, RootSpec } from "./scenario";

/**
 * The scripted model's prompts and messages the schedule sends, each with what it must produce:
 * every text carries a unique tag, so each expected answer is unique, and every child a script
 * starts is in the ledger with the answer it must give.
 */

/** What a prompt or message must produce: the session's answers, and the children its model starts. */
export interface Scripted {
  answers: string[];
  children: ModelChild[];
}

const script = (...steps: Record<string, unknown>[]): string => JSON.stringify({ script: steps });

/** Prompts and messages; every text carries a unique tag, so each expected answer is unique. */
export function oneShotPrompt(rng: Rng, tag: string): { prompt: string; answers: string[] } {
  if (rng.chance(0.4)) return { prompt: `task ${tag}`, answers: [`echo: task ${tag}`] };
  if (rng.chance(0.1)) return { prompt: script({ fail: `child failed ${tag}` }), answers: [] };
  return { prompt: script({ think: rng.int(0, 60) }, { say: `answer ${tag}` }), answers: [`answer ${tag}`] };
}

export function continuablePrompt(rng: Rng, tag: string): { prompt: string } & Scripted {
  if (rng.chance(0.3)) return { prompt: `job ${tag}`, answers: [`echo: job ${tag}`], children: [] };
  if (rng.chance(0.25)) {
    // a grandchild: the child delegates in turn (foreground one-shot, or in the background)
    const background = rng.chance(0.5);
    const nested = oneShotPrompt(rng, `${tag}n`);
    return {
      prompt: script(
        {
          call: [
            {
              tool: "subagent",
              args: {
                description: `nested ${tag}`,
                prompt: nested.prompt,
                ...(background ? { run_in_background: true } : {}),
              },
            },
          ],
        },
        { say: `final ${tag}` },
      ),
      answers: [`final ${tag}`, ...nested.answers],
      children: [modelChild(`nested ${tag}`, background, nested.answers, [])],
    };
  }
  return {
    prompt: script(
      { call: [{ tool: "report", args: { output: `progress ${tag}` } }] },
      { think: rng.int(0, 60) },
      { say: `final ${tag}` },
    ),
    answers: [`final ${tag}`],
    children: [],
  };
}

function modelChild(
  description: string,
  background: boolean,
  answers: readonly string[],
  children: ModelChild[],
): ModelChild {
  const answer = answers[0];
  return { description, background, ...(answer === undefined ? {} : { answer }), children };
}

/**
 * A scripted message's reference to a child a step starts over HTTP (`send_message`'s
 * `subagent_id`, `interrupt_agent`'s `agent_id`): the child's id exists only once its root does,
 * so the script names it by ref and the runner fills the id in when it sends the message
 * (harness.ts `withChildIds`).
 */
export function childRef(ref: string): string {
  return `@child:${ref}`;
}

/** Every `childRef` in a text; the first group is the ref. */
export const CHILD_REFS = /@child:([a-z0-9]+)/g;

export function rootMessage(
  rng: Rng,
  root: RootSpec,
  tag: string,
  continuables: readonly ChildSpec[],
): { content: string } & Scripted {
  const mine = continuables.filter((c) => c.root === root.ref);
  const kind = rng.weighted([
    ["echo", 4],
    ["think", 2],
    ["background", 3],
    ["foreground", 2],
    ["fail", 1],
    ["relay", mine.length > 0 ? 2 : 0],
    ["interrupt-agent", mine.length > 0 ? 1 : 0],
  ] as const);
  switch (kind) {
    case "relay": {
      const target = rng.pick(mine);
      return {
        content: script(
          {
            call: [
              { tool: "send_message", args: { subagent_id: childRef(target.ref), message: `relay ${tag}` } },
            ],
          },
          { say: `relayed ${tag}` },
        ),
        answers: [`relayed ${tag}`, `echo: relay ${tag}`],
        children: [],
      };
    }
    case "interrupt-agent": {
      const target = rng.pick(mine);
      return {
        content: script(
          { call: [{ tool: "interrupt_agent", args: { agent_id: childRef(target.ref) } }] },
          { say: `stopped ${tag}` },
        ),
        answers: [`stopped ${tag}`],
        children: [],
      };
    }
    case "echo":
      return { content: `hello ${tag}`, answers: [`echo: hello ${tag}`], children: [] };
    case "think":
      return {
        content: script({ think: rng.int(10, 120) }, { say: `slow ${tag}` }),
        answers: [`slow ${tag}`],
        children: [],
      };
    case "fail":
      return { content: script({ fail: `model failed ${tag}` }), answers: [], children: [] };
    case "background": {
      const child: { prompt: string; answers: string[]; children?: ModelChild[] } =
        root.backgroundMode === "continuable" ? continuablePrompt(rng, tag) : oneShotPrompt(rng, tag);
      return {
        content: script(
          {
            call: [
              {
                tool: "subagent",
                args: { description: `bg ${tag}`, run_in_background: true, prompt: child.prompt },
              },
            ],
          },
          { say: `started ${tag}` },
        ),
        answers: [`started ${tag}`, ...child.answers],
        children: [modelChild(`bg ${tag}`, true, child.answers, child.children ?? [])],
      };
    }
    case "foreground": {
      const child = oneShotPrompt(rng, tag);
      return {
        content: script(
          { call: [{ tool: "subagent", args: { description: `fg ${tag}`, prompt: child.prompt } }] },
          { say: `fg done ${tag}` },
        ),
        answers: [`fg done ${tag}`, ...child.answers],
        children: [modelChild(`fg ${tag}`, false, child.answers, [])],
      };
    }
  }
}

export function followupContent(rng: Rng, tag: string): { content: string; answers: string[] } {
  if (rng.chance(0.5)) return { content: `fu ${tag}`, answers: [`echo: fu ${tag}`] };
  return {
    content: script({ think: rng.int(0, 40) }, { say: `fu answer ${tag}` }),
    answers: [`fu answer ${tag}`],
  };
}
