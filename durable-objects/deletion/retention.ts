import { positiveInt } from "../../src/core/positive-int";
import type { Deletion } from "./deletion";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

const DAY_MS = 24 * 3600 * 1000;

/**
 * RETENTION_DAYS (README "Deleting sessions"): a top-level session whose whole tree saw no
 * activity for that many days is deleted like a `DELETE`. Activity is anything a session's log
 * records (an accepted message, a start, a decision, a turn, a child's report or notice): the
 * newest event of any log in the tree. The root's alarm wakes it when its own newest event is that
 * old; it then asks its tree (its children, theirs, and so on) for theirs, and deletes the tree or
 * waits until the newest of them is that old.
 */
export class Retention implements SessionPart {
  readonly name = "retention";
  readonly #ctx: SessionContext;
  readonly #deletion: Deletion;
  readonly #days: number | undefined;
  /** The newest activity the tree reported, when asked (memory only: asked again after a restart). */
  #tree = 0;

  constructor(ctx: SessionContext, deletion: Deletion, retentionDays: string | undefined) {
    this.#ctx = ctx;
    this.#deletion = deletion;
    // absent, empty or not a positive integer: no retention
    this.#days = positiveInt(retentionDays, 0) || undefined;
  }

  nextDue(): number | undefined {
    const latest = this.#latest();
    return latest === undefined ? undefined : latest + this.#days! * DAY_MS;
  }

  async step(): Promise<boolean> {
    const due = this.nextDue();
    if (due === undefined || due > Date.now()) return false;
    this.#tree = Math.max(this.#tree, await this.treeActivity());
    if (this.nextDue()! > Date.now()) return false; // something in the tree is more recent
    await this.#deletion.mark("retention");
    return true;
  }

  /** The newest activity of this session and every local session below it (epoch ms). */
  async treeActivity(): Promise<number> {
    const { stores } = this.#ctx;
    const own = stores.log.lastAt() ?? 0;
    const children = stores.children.all().map((c) => c.childId);
    const below = await Promise.all(
      children.map(async (id) => {
        try {
          return await this.#ctx.session(id).treeActivity();
        } catch {
          return Date.now(); // unreachable now: counted as active, asked again later
        }
      }),
    );
    return Math.max(own, ...below);
  }

  /** The newest activity known of the tree, for a top-level session under retention. */
  #latest(): number | undefined {
    if (this.#days === undefined || this.#deletion.deleting()) return undefined;
    const header = this.#ctx.header();
    if (!header || header.parentSession !== null) return undefined;
    return Math.max(this.#ctx.stores.log.lastAt() ?? header.createdAt, this.#tree);
  }
}
