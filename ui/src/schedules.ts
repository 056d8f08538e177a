import type { CronSchedule, SubagentsClient } from "../../src/client";
import { field, h, replace } from "./dom";
import { dateTime, shortId, text, until } from "./format";
import { attempt, clearError, note } from "./notice";

/**
 * The recurring schedules of the selected session (`GET /v1/sessions/:id/schedules`, oldest
 * first), folded under the controls: the summary names how many there are and when the next one
 * fires; open, each schedule shows its cron, its time zone, its next firing in the browser's
 * local time and its message, with a Delete button, and a form adds one (cron, time zone, UTC
 * unless changed, and the message). A refusal (a malformed cron or an unknown time zone: 400)
 * shows in the error banner. The list is re-read on the dashboard's refresh and when the
 * session's log shows a schedule made, deleted or fired; the form keeps what is typed meanwhile.
 */

export interface SchedulesDeps {
  client(): SubagentsClient | undefined;
  /** Whether the session was deleted from this page (its reads failing then is expected). */
  gone(id: string): boolean;
}

const CRON_MAX = 200;
const TIMEZONE_MAX = 64;

export class SchedulesPanel {
  readonly #root: HTMLDetailsElement;
  readonly #deps: SchedulesDeps;
  readonly #summary: HTMLElement;
  readonly #list: HTMLElement;
  #sessionId: string | undefined;
  #schedules: CronSchedule[] | undefined;
  /** Numbers the reads: only the newest one's answer is shown. */
  #generation = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #painted = "";

  constructor(root: HTMLDetailsElement, deps: SchedulesDeps) {
    this.#root = root;
    this.#deps = deps;
    this.#summary = h("span", { class: "schedules-summary" });
    this.#list = h("ul", { class: "schedule-list", "aria-label": "Recurring schedules" });
    replace(root, h("summary", {}, "Schedules ", this.#summary), this.#list, this.#form(), zoneChoices());
  }

  /** Whose schedules are shown (undefined: none); a new session's list is read at once. */
  show(sessionId: string | undefined): void {
    if (sessionId === this.#sessionId) return;
    this.#generation++;
    this.#sessionId = sessionId;
    this.#schedules = undefined;
    this.#root.dataset.scheduleFor = sessionId ?? "";
    this.#paint();
    if (sessionId) this.soon(0);
  }

  clear(): void {
    this.show(undefined);
  }

  /** Re-reads the list shortly (a burst of events, as when a transcript replays, reads once). */
  soon(delayMs = 150): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const client = this.#deps.client();
      if (client) void attempt("reading the schedules", () => this.refresh(client));
    }, delayMs);
  }

  /** Re-reads the shown session's schedules; a failure of a read no longer wanted is dropped. */
  async refresh(client: SubagentsClient): Promise<void> {
    const sessionId = this.#sessionId;
    if (!sessionId) return;
    const generation = ++this.#generation;
    let schedules: CronSchedule[];
    try {
      // the recurring ones (the list holds messages held for their time too)
      schedules = (await client.schedules(sessionId)).filter((s) => s.kind === "cron");
    } catch (error) {
      if (generation === this.#generation && !this.#deps.gone(sessionId)) throw error;
      return;
    }
    if (generation !== this.#generation) return;
    this.#schedules = schedules;
    this.#paint();
  }

  #paint(): void {
    const schedules = this.#schedules;
    const now = Date.now();
    this.#root.dataset.count = String(schedules?.length ?? 0);
    const next = schedules?.length ? Math.min(...schedules.map((s) => s.next)) : undefined;
    replace(
      this.#summary,
      schedules === undefined
        ? null
        : schedules.length === 0
          ? h("span", { class: "muted" }, "none")
          : [
              h("span", { class: "badge schedule-count" }, String(schedules.length)),
              next === undefined ? null : h("span", { class: "muted" }, ` next ${dateTime(next)}`),
            ],
    );
    // unchanged schedules keep their elements (a button being clicked stays where it is)
    const painted = JSON.stringify([this.#sessionId, schedules]);
    if (painted === this.#painted) {
      for (const el of this.#list.querySelectorAll<HTMLElement>("[data-next]"))
        el.querySelector(".until")!.textContent = ` (${until(Number(el.dataset.next), now)})`;
      return;
    }
    this.#painted = painted;
    if (schedules === undefined) {
      this.#list.replaceChildren();
      return;
    }
    if (schedules.length === 0) {
      replace(this.#list, h("li", { class: "empty" }, "No recurring schedules."));
      return;
    }
    replace(
      this.#list,
      schedules.map((s) => this.#row(s, now)),
    );
  }

  #row(s: CronSchedule, now: number): HTMLElement {
    const message = typeof s.content === "string" ? s.content : text(s.content);
    return h(
      "li",
      {
        class: "schedule-item",
        "data-schedule-id": s.scheduleId,
        "data-cron": s.cron,
        "data-timezone": s.timezone,
        "data-next": s.next,
      },
      h(
        "div",
        { class: "schedule-head" },
        h("code", { class: "cron", title: "minute hour day-of-month month day-of-week" }, s.cron),
        h("span", { class: "timezone" }, s.timezone),
        h(
          "button",
          {
            type: "button",
            class: "secondary danger",
            "data-action": "unschedule",
            title: `Delete schedule ${s.scheduleId}`,
            onclick: (event: Event) =>
              void this.#remove(s.scheduleId, event.currentTarget as HTMLButtonElement),
          },
          "Delete",
        ),
      ),
      h(
        "div",
        { class: "schedule-next" },
        "next ",
        h(
          "time",
          {
            datetime: new Date(s.next).toISOString(),
            title: `${inZone(s.next, s.timezone)} (${s.timezone})`,
          },
          dateTime(s.next),
        ),
        h("span", { class: "until muted" }, ` (${until(s.next, now)})`),
      ),
      h("p", { class: "schedule-content", title: message }, message),
    );
  }

  #form(): HTMLFormElement {
    const form = h(
      "form",
      { class: "schedule-form", "data-form": "schedule" },
      h(
        "div",
        { class: "row" },
        h(
          "label",
          {},
          "Cron ",
          h("input", {
            name: "cron",
            required: true,
            maxlength: CRON_MAX,
            placeholder: "*/15 * * * *",
            spellcheck: "false",
            autocomplete: "off",
            title: "Five fields: minute hour day-of-month month day-of-week",
          }),
        ),
        h(
          "label",
          {},
          "Time zone ",
          h("input", {
            name: "timezone",
            value: "UTC",
            maxlength: TIMEZONE_MAX,
            list: "time-zones",
            spellcheck: "false",
            autocomplete: "off",
            title: "An IANA time zone name (UTC when empty)",
          }),
        ),
      ),
      h(
        "label",
        { class: "message" },
        "Message ",
        h("textarea", {
          name: "message",
          rows: 2,
          required: true,
          placeholder: "What the session receives at every firing",
        }),
      ),
      h(
        "p",
        { class: "muted hint" },
        "Five fields: minute hour day-of-month month day-of-week, e.g. ",
        h("code", {}, "0 9 * * 1-5"),
        " (9:00 on weekdays).",
      ),
      h("button", { type: "submit", "data-action": "add-schedule" }, "Add schedule"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.#add(form);
    });
    return form;
  }

  async #add(form: HTMLFormElement): Promise<void> {
    const client = this.#deps.client();
    const sessionId = this.#sessionId;
    if (!client || !sessionId) return;
    const cron = field(form, "cron");
    const message = field(form, "message");
    const timezone = field(form, "timezone") || "UTC";
    if (!cron || !message) return;
    const button = form.querySelector("button")!;
    button.disabled = true;
    const ok = await attempt("adding a schedule", async () => {
      const { scheduleId, next } = await client.schedule(sessionId, { cron, timezone, content: message });
      note(`schedule ${shortId(scheduleId.replace(/^sch_/, ""))} added: first at ${dateTime(next)}`);
    });
    button.disabled = false;
    if (ok) {
      clearError();
      for (const name of ["cron", "message"])
        (form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement).value = "";
    }
    if (this.#sessionId === sessionId) await attempt("reading the schedules", () => this.refresh(client));
  }

  async #remove(scheduleId: string, button: HTMLButtonElement): Promise<void> {
    const client = this.#deps.client();
    const sessionId = this.#sessionId;
    if (!client || !sessionId) return;
    button.disabled = true;
    const ok = await attempt("deleting a schedule", () => client.unschedule(sessionId, scheduleId));
    button.disabled = false;
    if (ok) {
      clearError();
      note("schedule deleted");
    }
    if (this.#sessionId === sessionId) await attempt("reading the schedules", () => this.refresh(client));
  }
}

/** The wall time of `at` in `timezone` (the schedule's own), or nothing when the browser does not know it. */
function inZone(at: number, timezone: string): string {
  try {
    return new Date(at).toLocaleString([], { timeZone: timezone, dateStyle: "medium", timeStyle: "short" });
  } catch {
    return new Date(at).toISOString();
  }
}

/** Suggestions for the time zone field: UTC, the browser's own, then every zone the browser knows. */
function zoneChoices(): HTMLDataListElement {
  const local = Intl.DateTimeFormat().resolvedOptions().timeZone;
  let known: string[] = [];
  try {
    known = Intl.supportedValuesOf("timeZone");
  } catch {
    // an older browser: UTC and the local zone only
  }
  const zones = [...new Set(["UTC", local, ...known])];
  return h(
    "datalist",
    { id: "time-zones" },
    zones.map((zone) => h("option", { value: zone })),
  );
}
