// Words and numbers for people: end reasons, guard events, counts, money, durations.

import { END_WORDS, OUTCOME_NOTICES } from "./protocol";
import type { AnyKeyOf, EndReason, EndStatus, EventOf, Outcome, Status, StatusOf, StatusState } from "./protocol";

export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count.toLocaleString("en-US")} ${count === 1 ? noun : nouns}`;
}

export function formatNumber(value: number): string {
  return value.toLocaleString("en-US");
}

export function formatTokens(value: number): string {
  if (value >= 10_000) return `${Math.round(value / 1000).toLocaleString("en-US")}k`;
  return value.toLocaleString("en-US");
}

export function formatCost(usd: number): string {
  if (usd === 0) return "$0";
  if (usd < 0.0001) return "< $0.0001";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** `Xm Ys`, the way the server writes run times. */
export function formatElapsed(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  return `${Math.floor(whole / 60)}m ${whole % 60}s`;
}

export function formatWhen(iso: string | undefined, now = Date.now()): string {
  if (!iso) return "";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const minutes = Math.round((now - then) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return new Date(then).toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
}

/**
 * The outcome's notice for the end line, or "" when the answer needs none (or the run has no outcome). The
 * notices are the schema's (each outcome value's description); an outcome newer than this build shows its code.
 */
export function outcomeWords(outcome: Outcome | null | undefined): string {
  if (!outcome) return "";
  return OUTCOME_NOTICES[outcome] ?? `Outcome: ${String(outcome).replaceAll("_", " ")}.`;
}

/** A re-run task's changes since its last run in one line, as the report's "What changed" section counts them. */
export function taskDiffWords(diff: EventOf<"task_diff">): string {
  const parts: string[] = [];
  if (diff.new_findings?.length) parts.push(plural(diff.new_findings.length, "new finding"));
  if (diff.new_sources?.length) parts.push(plural(diff.new_sources.length, "new source"));
  if (diff.changed_sources?.length) parts.push(`${plural(diff.changed_sources.length, "source")} changed`);
  if (diff.gone_sources?.length) parts.push(`${plural(diff.gone_sources.length, "source")} gone`);
  for (const figure of diff.moved_figures ?? []) parts.push(`${figure.before} → ${figure.after}`);
  const since = `What changed since the last run of “${diff.task}”`;
  return parts.length ? `${since}: ${parts.join("; ")}` : `${since}: nothing`;
}

/** The end line's words: the schema's for the end reason (each value's description); a reason newer than this
 * build shows its code. */
export function endWords(end: EndStatus): string {
  const reason: EndReason = end.reason;
  const words: string | undefined = END_WORDS[reason];
  if (words) return words;
  const fallback = end.state === "done" ? "Finished" : "Ended with an error";
  return reason ? `${fallback} (${reason.replaceAll("_", " ")})` : fallback;
}

const CEILINGS: Record<string, string> = {
  tool_calls: "tool calls",
  tokens: "tokens",
  time: "time",
  cost: "cost",
  steps: "graph steps",
};

function ceilingAmount(reason: string, value: number): string {
  if (reason === "cost") return formatCost(value);
  if (reason === "time") return formatElapsed(value);
  return formatNumber(Math.round(value));
}

type BudgetStatus = StatusOf<"budget_soft" | "budget_halt">;

function usedOfLimit(event: BudgetStatus): string {
  const reason = event.reason;
  if (typeof event.used !== "number" || typeof event.limit !== "number") return CEILINGS[reason] ?? reason;
  return `${CEILINGS[reason] ?? reason} ${ceilingAmount(reason, event.used)} of ${ceilingAmount(reason, event.limit)}`;
}

function percent(event: BudgetStatus): string {
  if (typeof event.used !== "number" || typeof event.limit !== "number" || event.limit <= 0) return "75 %";
  return `${Math.round((event.used / event.limit) * 100)} %`;
}

export type NoteLevel = "info" | "warn" | "stop";

export interface Note {
  level: NoteLevel;
  text: string;
}

/**
 * A status event that is neither the heartbeat, a sub-agent's start or end, nor the run's end, in plain
 * words. A state newer than this UI is shown as its name and detail.
 */
const NOTES: { [S in StatusState]?: (event: StatusOf<S>) => Note } = {
  budget_soft: (e) => ({ level: "warn", text: `Budget ${percent(e)} used (${usedOfLimit(e)}): wrapping up` }),
  budget_halt: (e) => ({ level: "stop", text: `Budget used up (${usedOfLimit(e)}): stopping` }),
  recursion_limit: (e) => ({
    level: "stop",
    text: `Near the step limit${typeof e.used === "number" && typeof e.limit === "number" ? ` (${e.used} of ${e.limit} steps)` : ""}: stopping`,
  }),
  loop_detected: (e) => ({
    level: "warn",
    text: `Loop detected: the same call ${e.repeats ?? "several"} times; the agent was told to change course`,
  }),
  loop_halt: (e) => ({ level: "stop", text: `Loop: the same call ${e.repeats ?? "many"} times; the agent was stopped` }),
  runaway_output: (e) => ({
    level: "warn",
    text: `Runaway output (${e.reason ?? "too long"}): trimmed${
      typeof e.chars === "number" && typeof e.kept_chars === "number"
        ? ` from ${formatNumber(e.chars)} to ${formatNumber(e.kept_chars)} characters`
        : ""
    }`,
  }),
  runaway_halt: () => ({ level: "stop", text: "Runaway output again: the agent was stopped" }),
  rate_limited: (e) => ({
    level: "warn",
    text: `Rate limited${e.label ? ` by ${e.label}` : ""}: waiting ${e.wait_s ?? "?"} s${e.attempt ? ` (attempt ${e.attempt})` : ""}`,
  }),
  model_unavailable: (e) => ({ level: "stop", text: `Model unavailable${e.detail ? `: ${e.detail}` : ""}` }),
  revising: (e) => ({
    level: "info",
    text: `${e.reason === "subagent_findings" ? "Revising findings" : "Revising report"}${e.detail ? `: ${e.detail}` : ""}`,
  }),
  compacting: (e) => ({
    level: "info",
    text: `Compacting context${typeof e.tokens_estimate === "number" ? ` (~${formatTokens(e.tokens_estimate)} tokens)` : ""}`,
  }),
  compacted: (e) => ({
    level: "info",
    text: `Context compacted: ${plural(e.messages_summarized ?? 0, "message")} summarized${
      typeof e.tokens_estimate === "number" ? `, ~${formatTokens(e.tokens_estimate)} tokens now` : ""
    }`,
  }),
  stop_requested: (e) => ({
    level: "warn",
    text: e.reason === "wrap_up" ? "Wrapping up at your request: the report is being written" : "Stopping at your request",
  }),
  steer_received: (e) => ({
    level: "info",
    text: `You steered the run: \u201c${e.message}\u201d${
      e.dropped_units?.length ? `; stopping ${plural(e.dropped_units.length, "running unit")}, each handing over what it found` : ""
    }`,
  }),
  warning: (e) => ({ level: "warn", text: e.detail ?? "Warning" }),
  keyless_search: (e) => ({ level: "info", text: e.detail ?? "Web search runs without a key (rate-limited)" }),
  mcp_ready: (e) => ({
    level: "info",
    text: `MCP server ${e.label ?? e.server ?? ""} ready: ${plural(e.tool_count ?? e.tools?.length ?? 0, "tool")}${e.cached ? " (cached listing)" : ""}`,
  }),
  mcp_error: (e) => ({ level: "warn", text: `MCP server ${e.label ?? e.server ?? ""} failed${e.detail ? `: ${e.detail}` : ""}` }),
  triage: (e) => ({ level: "info", text: e.detail === "simple" ? "A simple question: answering directly" : "Research question: planning the research" }),
};

export function statusNote(event: Status): Note {
  // NOTES[event.state] takes this very state's status, which TypeScript cannot correlate by itself.
  const words = NOTES[event.state] as ((event: Status) => Note) | undefined;
  if (words) return words(event);
  const name = String(event.state).replaceAll("_", " ");
  const detail = "detail" in event ? event.detail : undefined;
  return { level: "info", text: detail ? `${name}: ${detail}` : name };
}

/** The status fields each note's words already say, so the generic extras list does not repeat them. */
export const NOTE_FIELDS: readonly AnyKeyOf<Status>[] = [
  "state", "reason", "detail", "used", "limit", "repeats", "chars", "kept_chars", "wait_s", "attempt", "label",
  "server", "tool_count", "tools", "cached", "tokens_estimate", "messages_summarized", "messages_kept", "model",
  "elapsed", "elapsed_s",
];

const CITATION_REASONS: Record<string, string> = {
  quote_verified: "Verified: the quoted text is on the page",
  snippet_quote_verified: "Verified in the search result's snippet",
  page_retrieved: "Read in full",
  search_snippet_only: "Unverified: only seen as a search result",
  quote_not_found: "Unverified: the quote is not on the page",
  quote_missing: "Unverified: no quote backs it",
  number_not_in_quote: "Unverified: a number is not in the quote",
  no_url: "Unverified: no address to check",
  not_retrieved: "Removed: never retrieved",
};

export function citationWords(reason: string | undefined, verified: boolean | undefined): string {
  if (reason && CITATION_REASONS[reason]) return CITATION_REASONS[reason]!;
  if (verified === true) return "Verified";
  if (verified === false) return "Unverified";
  return "Not checked";
}

const VERDICTS: Record<string, string> = {
  unsupported_number: "A number in this sentence is not in the cited text",
  unsupported_quote: "The cited text does not say this",
  unsupported_name: "A name in this sentence is not in the cited text",
  contradicted: "The cited text says otherwise",
  not_supported: "Judged not supported by the cited text",
  source_not_read: "The cited source was never read in full",
  conflicting: "The cited sources disagree on this",
  uncited_number: "A figure with no source",
  unchecked: "Not checked: nothing in it to look up in the cited text, and no judge verdict",
};

// How a supported claim was checked: only a judged one is "supported by the cited text" in so many words.
const SUPPORTED_BY: Record<string, string> = {
  judged: "Judged supported by the cited text",
  figures_and_quotes: "Its figures and quotes are in the cited text",
  names_and_direction: "Its names are in the cited text; its meaning was not judged",
  not_checked: "Cites a source that was read; not checked for meaning",
};

const DECIDED_BY: Record<string, string> = {
  figures_and_quotes: "figures and quotes looked up in the text",
  names_and_direction: "names and direction checked",
  judged: "judged by the model",
  not_checked: "not checked for meaning",
};

/** The verdict on a claim in words, saying how far it was checked (`decided_by`, report/claims.py). */
export function verdictWords(verdict: string, decidedBy?: string): string {
  if (verdict === "supported") return SUPPORTED_BY[decidedBy ?? ""] ?? "Checked against the cited text";
  if (verdict === "contradicted" && decidedBy === "judged") return "Judged contradicted by the cited text";
  return VERDICTS[verdict] ?? verdict.replaceAll("_", " ");
}

/** How a claim's verdict was decided, in words; empty when the record does not say. */
export function decidedByWords(decidedBy?: string): string {
  return DECIDED_BY[decidedBy ?? ""] ?? "";
}

/** Whether anything checked a claim (false: shown as not checked). A claim a server before unchecked verdicts
 * called supported with nothing checked is not checked either. */
export function checkedForMeaning(verdict: string, decidedBy?: string): boolean {
  return verdict !== "unchecked" && !(verdict === "supported" && decidedBy === "not_checked");
}

export function domainInitials(domain: string): string {
  const host = domain.replace(/:\d+$/, "").replace(/^www\./, "");
  if (/^[\d.]+$/.test(host) || host.includes(":") || host === "localhost") return "IP";
  const labels = host.split(".").filter(Boolean);
  const name = labels.length >= 2 ? labels[labels.length - 2]! : (labels[0] ?? "?");
  return name.slice(0, 2).toUpperCase() || "?";
}

export function domainHue(domain: string): number {
  let hash = 0;
  for (const char of domain) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % 360;
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
