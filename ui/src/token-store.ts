/**
 * The sign-in token lives only in this tab's sessionStorage: never localStorage, a cookie or a URL.
 * Closing the tab forgets it.
 */

const KEY = "subagents.token";

export function loadToken(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function saveToken(token: string): void {
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    // storage disabled: the token lives in memory until reload
  }
}

export function forgetToken(): void {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}
