import { ok } from "../../src/contract/errors";
import { callerMethod, peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

/** A session's end: deleted with its tree (README "Deleting sessions"), and its tree's activity for retention. */
export const deletionMethods = {
  /**
   * `DELETE /v1/sessions/:id`: the session and every local descendant answer 404 from the answer
   * on; each stops its work and erases itself in the background (deletion.ts).
   */
  deleteTree: callerMethod({
    need: "delete",
    run: async (parts: Parts) => {
      await parts.deletion.mark("caller");
      return ok({ accepted: true as const });
    },
  }),
  /** Its parent deletes it with its tree; `gone` once nothing of it is left. */
  deleteFrom: peerMethod({
    absent: async (_parentId: string) => ({ gone: true }), // erased (or never created): nothing of it is left
    run: async (parts: Parts, parentId: string) => {
      if (parts.stores.header.get()?.parentSession !== parentId) return { gone: false };
      await parts.deletion.mark("parent");
      return { gone: false };
    },
  }),
  /** The newest activity of this session's tree (a root's retention asks). */
  treeActivity: peerMethod({
    absent: async () => 0,
    run: async (parts: Parts) => parts.retention.treeActivity(),
  }),
};
