// The Watching list: the caller's schedules (GET /schedules, schedules/listing.py), each with its next run, its
// last run's outcome and what its runs cost, and its digests newest first; a digest opens its run's thread.

import { h } from "../dom";
import { formatCost, formatWhen, outcomeWords, plural } from "../format";
import type { Outcome } from "../protocol";

export interface DigestSummary {
  run_id: string;
  thread_id: string;
  finished_at: string;
  status: string;
  outcome?: Outcome | null;
  failed: boolean;
  material: boolean;
  headline: string;
  cost_usd: number;
  report_path: string;
  thread_path: string;
}

export interface ScheduleSummary {
  name: string;
  question: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  next_run_at?: string | null;
  webhook?: string | null;
  runs: number;
  cost_usd: number;
  last?: DigestSummary | null;
  digests: DigestSummary[];
}

/** "in 5 min", "in 2 h", or the date, for a time still to come ("due" once it has passed). */
export function formatUntil(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const minutes = Math.round((then - now) / 60_000);
  if (minutes < 1) return "due";
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `in ${hours} h`;
  return new Date(then).toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
}

/** The last run's outcome in a few words: failed, or the outcome's own word. */
export function lastRunWords(last: DigestSummary | null | undefined): string {
  if (!last) return "No run yet";
  if (last.failed) return `Last run failed (${last.status.replaceAll("_", " ")})`;
  return `Last run: ${last.outcome ? last.outcome.replaceAll("_", " ") : last.status.replaceAll("_", " ")}`;
}

/** One list item per schedule; ``href`` is a digest's thread URL in this UI and ``open`` follows it in place. */
export function watchingItems(
  schedules: ScheduleSummary[],
  href: (threadId: string) => string,
  open: (threadId: string, event: MouseEvent) => void,
): HTMLElement[] {
  return schedules.map((schedule) => {
    const next = schedule.enabled ? `Next run ${formatUntil(schedule.next_run_at) || "as scheduled"}` : "Paused";
    const meta = [next, lastRunWords(schedule.last), plural(schedule.runs, "run"), formatCost(schedule.cost_usd)].join(" · ");
    const digests = schedule.digests.map((digest) => {
      const link = h(
        "a",
        { href: href(digest.thread_id), class: `digest${digest.failed ? " failed" : ""}`, title: outcomeWords(digest.outcome) || undefined },
        h("span", { class: "digest-headline", text: digest.headline }),
        h("span", { class: "digest-meta muted", text: [formatWhen(digest.finished_at), digest.failed ? "failed" : digest.outcome?.replaceAll("_", " ")].filter(Boolean).join(" · ") }),
      );
      link.addEventListener("click", (event) => open(digest.thread_id, event));
      return h("li", { dataset: { runId: digest.run_id } }, link);
    });
    return h(
      "li",
      { class: `watch${schedule.enabled ? "" : " paused"}`, dataset: { schedule: schedule.name } },
      h("div", { class: "watch-name", text: schedule.name, title: schedule.question }),
      h("div", { class: "watch-meta muted", text: meta }),
      h("div", { class: "watch-cron muted", text: `${schedule.cron} (${schedule.timezone})${schedule.webhook ? ` · webhook ${schedule.webhook}` : ""}` }),
      digests.length ? h("ul", { class: "digest-list", "aria-label": `Digests of ${schedule.name}, newest first` }, digests) : null,
    );
  });
}
