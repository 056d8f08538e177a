import { Dashboard } from "./app";
import { $, field } from "./dom";
import { loadToken } from "./token-store";

/** Boot: the sign-in form, or straight in with the token this tab already holds. */

const dashboard = new Dashboard();
const form = $<HTMLFormElement>("#signin-form");

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const token = field(form, "token");
  if (!token) return;
  const button = form.querySelector("button");
  if (button) button.disabled = true;
  void dashboard.signIn(token).finally(() => {
    if (button) button.disabled = false;
    form.reset();
  });
});

$("#sign-out").addEventListener("click", () => dashboard.signOut());

const saved = loadToken();
if (saved) void dashboard.signIn(saved);
else {
  document.body.dataset.ready = "true";
  (form.elements.namedItem("token") as HTMLInputElement | null)?.focus();
}
