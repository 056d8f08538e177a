import { h, replace } from "./dom";
import { shortId } from "./format";
import type { TreeNode } from "./tree";

/**
 * Deleting the selected session, in two steps on the page (never `window.confirm`): "Delete"
 * opens a confirmation that names the session and how many sessions below it go too; "Delete for
 * good" sends `DELETE /v1/sessions/:id` (its whole tree goes: every route answers 404 from then
 * on), "Cancel" or Escape folds it again. A top-level session is deleted by an admin only; a
 * session token's refusal (403) shows in the error banner like any other.
 */

export interface DeleteDeps {
  /** How many sessions below `id` the shown tree holds. */
  below(id: string): number;
  /** Deletes the session; answers whether it was deleted (a failure is already shown). */
  remove(node: TreeNode): Promise<boolean>;
}

/** The control for the session `current()` answers (read at each click: the tree may have named it since). */
export function deleteControl(current: () => TreeNode, deps: DeleteDeps): HTMLElement {
  const first = current();
  const box = h("div", { class: "delete-session", "data-target-session": first.id });

  const folded = () =>
    replace(
      box,
      h(
        "button",
        {
          type: "button",
          class: "secondary danger",
          "data-action": "delete-session",
          title: first.parentId
            ? "Delete this session and everything below it"
            : "Delete this top-level session and its whole tree (admin token)",
          onclick: confirming,
        },
        "Delete",
      ),
    );

  function confirming(): void {
    const node = current();
    const name = node.label ? `${node.label} (${shortId(node.id)})` : shortId(node.id);
    const below = deps.below(node.id);
    box.dataset.confirming = "true";
    const cancel = h(
      "button",
      { type: "button", class: "secondary", "data-action": "cancel-delete", onclick: fold },
      "Cancel",
    );
    const confirm = h(
      "button",
      {
        type: "button",
        class: "danger",
        "data-action": "confirm-delete",
        onclick: () => {
          for (const b of [confirm, cancel]) b.disabled = true;
          void deps.remove(node).then((deleted) => {
            if (!deleted) fold();
          });
        },
      },
      "Delete for good",
    );
    replace(
      box,
      h(
        "div",
        { class: "confirm-delete", role: "alertdialog", "aria-label": `Delete ${name}?` },
        h(
          "p",
          {},
          "Delete ",
          h("strong", {}, name),
          below === 0 ? "" : ` and the ${below === 1 ? "session" : `${below} sessions`} below it`,
          "? Its log, schedules and children go with it; this cannot be undone.",
        ),
        h("div", { class: "confirm-buttons" }, confirm, cancel),
      ),
    );
    box.addEventListener("keydown", onKey);
    cancel.focus();
  }

  function onKey(event: KeyboardEvent): void {
    if (event.key === "Escape") fold();
  }

  function fold(): void {
    box.removeEventListener("keydown", onKey);
    delete box.dataset.confirming;
    folded();
  }

  folded();
  return box;
}
