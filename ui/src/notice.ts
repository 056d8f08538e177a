import { SubagentError } from "../../src/client";
import { $, h, replace } from "./dom";

/**
 * The error banner (one at a time, dismissable) and short-lived notes. Errors from the API show
 * their code and status as the server stated them; anything else shows its message.
 */

export function describeError(error: unknown): { code: string; text: string } {
  if (error instanceof SubagentError) return { code: String(error.code), text: error.describe() };
  if (error instanceof Error) return { code: "ERROR", text: error.message };
  return { code: "ERROR", text: String(error) };
}

export function showError(error: unknown, context?: string): void {
  const banner = $("#error");
  const { code, text } = describeError(error);
  banner.dataset.errorCode = code;
  replace(
    banner,
    h("span", { class: "error-text" }, context ? `${context}: ${text}` : text),
    h("button", { type: "button", class: "link", "aria-label": "Dismiss", onclick: clearError }, "×"),
  );
  banner.hidden = false;
}

export function clearError(): void {
  const banner = $("#error");
  banner.hidden = true;
  delete banner.dataset.errorCode;
  banner.replaceChildren();
}

let noteTimer: ReturnType<typeof setTimeout> | undefined;

/** A brief confirmation ("message sent", "child started ..."). */
export function note(message: string): void {
  const el = $("#note");
  el.textContent = message;
  el.hidden = false;
  if (noteTimer) clearTimeout(noteTimer);
  noteTimer = setTimeout(() => {
    el.hidden = true;
  }, 4000);
}

/** Runs an action, showing its failure in the banner; answers whether it succeeded. */
export async function attempt(context: string, action: () => Promise<unknown>): Promise<boolean> {
  try {
    await action();
    return true;
  } catch (error) {
    showError(error, context);
    return false;
  }
}
