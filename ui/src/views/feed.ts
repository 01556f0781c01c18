// The research as it happens: search rows with their result cards, pages read, tool and MCP calls with their
// results, skills, scripts run, guard notes, events this UI does not know, and one lane per sub-agent.

import { h, replaceChildren, syncKeyed } from "../dom";
import { extraFields } from "../protocol";
import { NOTE_FIELDS, formatNumber, formatTokens, plural, taskDiffWords } from "../format";
import type { FeedItem, Lane, Thought } from "../model";
import { laneLabel } from "../model";
import { domainOf, externalLink, fieldList, siteBadge } from "./common";

export function renderFeed(container: HTMLElement, feed: FeedItem[]): void {
  syncKeyed(container, feed, (item) => item.key, (item) => item.rev, makeItem, updateItem);
}

function makeItem(item: FeedItem): HTMLElement {
  return h("li", { class: `feed-item ${item.kind}` });
}

function updateItem(element: HTMLElement, item: FeedItem): void {
  switch (item.kind) {
    case "search":
      return renderSearch(element, item);
    case "page":
      return renderPage(element, item);
    case "call":
      return renderCall(element, item);
    case "skill":
      return replaceChildren(element, h("span", { class: "tag", text: "Skill" }), ` Applied ${item.event.name}`);
    case "script":
      return renderScript(element, item);
    case "task_diff":
      element.className = "feed-item note info task-diff";
      return replaceChildren(element, h("span", { class: "tag", text: "Task" }), " ", taskDiffWords(item.event));
    case "note":
      element.className = `feed-item note ${item.note.level}`;
      return replaceChildren(
        element,
        h("span", { class: "tag", text: noteTag(item) }),
        " ",
        item.note.text,
        fieldList(extraFields(item.event, NOTE_FIELDS), "fields inline"),
      );
    case "generic":
      return replaceChildren(
        element,
        h("span", { class: "tag", text: item.event.type.replaceAll("_", " ") }),
        fieldList(Object.entries(item.event).filter(([key, value]) => !["type", "role", "task_id"].includes(key) && value !== null && value !== undefined)),
      );
  }
}

function noteTag(item: Extract<FeedItem, { kind: "note" }>): string {
  if (item.event.state === "stop_requested") return "Stop";
  if (item.event.state === "steer_received") return "Steer";
  if (item.event.state === "warning" || item.event.state === "mcp_error") return "Warning";
  if (item.event.state === "revising") return "Revising";
  if (item.event.state === "compacting" || item.event.state === "compacted") return "Context";
  return item.note.level === "stop" ? "Stopped" : item.note.level === "warn" ? "Guard" : "Note";
}

function renderScript(element: HTMLElement, item: Extract<FeedItem, { kind: "script" }>): void {
  const event = item.event;
  element.classList.toggle("failed", event.status === "failed");
  replaceChildren(
    element,
    h("span", { class: "tag", text: "Script" }),
    ` ${event.path} `,
    h("span", { class: "muted", text: event.status === "failed" ? "failed" : "ran" }),
    h("details", { class: "folded code" }, h("summary", { text: "Code" }), h("pre", null, h("code", { text: event.code }))),
    event.output ? h("details", { class: "folded result" }, h("summary", { text: "Output" }), h("pre", null, h("code", { text: event.output }))) : null,
  );
}

function renderSearch(element: HTMLElement, item: Extract<FeedItem, { kind: "search" }>): void {
  const query = item.query?.query ?? item.results?.query ?? "";
  const results = item.results;
  let outcome = "searching…";
  if (results) outcome = results.ok ? plural(results.count, "result") : `failed: ${results.error ?? "unknown error"}`;
  const via = item.query?.source ? ` via ${item.query.source}` : "";
  const cards = (results?.results ?? []).map((hit) =>
    h(
      "li",
      { class: "hit" },
      externalLink(hit.url, siteBadge(domainOf(hit.url, hit.domain)), h("span", { class: "card-text" }, h("span", { class: "card-title", text: hit.title || hit.url }), h("span", { class: "card-domain", text: domainOf(hit.url, hit.domain) }))),
    ),
  );
  element.classList.toggle("failed", results?.ok === false);
  replaceChildren(
    element,
    h("div", { class: "search-head" }, h("span", { class: "tag", text: "Search" }), " ", h("q", { class: "query", text: query }), h("span", { class: "muted", text: ` ${outcome}${via}` })),
    cards.length ? h("ul", { class: "cards", "aria-label": `Results for ${query}` }, cards) : null,
    results ? fieldList(extraFields(results, ["id", "query", "ok", "count", "results", "error"])) : null,
  );
}

function renderPage(element: HTMLElement, item: Extract<FeedItem, { kind: "page" }>): void {
  const event = item.event;
  element.classList.toggle("failed", !event.ok);
  replaceChildren(
    element,
    h("span", { class: "tag", text: "Read" }),
    " ",
    siteBadge(domainOf(event.url)),
    externalLink(event.url, event.title || event.url),
    h("span", { class: "muted", text: event.ok ? ` ${formatNumber(event.chars ?? 0)} characters` : ` failed: ${event.error ?? "unknown error"}` }),
    fieldList(extraFields(event, ["url", "ok", "title", "chars", "error"])),
  );
}

function argsText(args: Record<string, unknown> | undefined): string {
  return Object.entries(args ?? {})
    .map(([name, value]) => `${name}=${typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value)}`)
    .join(", ");
}

function renderCall(element: HTMLElement, item: Extract<FeedItem, { kind: "call" }>): void {
  const call = item.call;
  const result = item.result;
  const name = call?.tool ?? result?.tool ?? "tool";
  const server = call && "server" in call ? call.server : result && "server" in result ? result.server : undefined;
  const outcome = result ? (result.ok ? `returned ${formatNumber(result.bytes)} bytes` : `failed${result.error_class ? ` (${result.error_class})` : ""}`) : "running…";
  element.classList.toggle("failed", result?.ok === false);
  replaceChildren(
    element,
    h("span", { class: "tag", text: item.via === "mcp" ? "MCP" : "Tool" }),
    " ",
    h("code", { text: server ? `${server} · ${name}` : name }),
    h("span", { class: "muted", text: ` ${outcome}` }),
    call && Object.keys(call.args ?? {}).length ? h("div", { class: "args" }, h("code", { text: argsText(call.args) })) : null,
    result ? h("details", { class: "folded result" }, h("summary", { text: result.ok ? "Result" : "Error" }), h("pre", null, h("code", { text: result.summary }))) : null,
    result && "repeated" in result && result.repeated ? h("p", { class: "muted", text: "Answered from the memo of failed calls, without calling again." }) : null,
    call ? fieldList(extraFields(call as unknown as Record<string, unknown>, ["id", "tool", "server", "args"])) : null,
    result ? fieldList(extraFields(result as unknown as Record<string, unknown>, ["id", "tool", "server", "ok", "summary", "bytes", "error_class", "repeated"])) : null,
  );
}

// --- thinking -----------------------------------------------------------------------------------------

export function renderThoughts(details: HTMLDetailsElement, thoughts: Thought[]): void {
  details.hidden = thoughts.length === 0;
  const summary = details.querySelector("summary") ?? details.appendChild(h("summary"));
  summary.textContent = `Thinking (${thoughts.length})`;
  const body = details.querySelector(".thoughts") ?? details.appendChild(h("div", { class: "thoughts" }));
  syncKeyed(body, thoughts, (t) => t.id, (t) => t.text.length, () => h("p", { class: "thought" }), (el, t) => {
    el.textContent = t.text;
  });
}

// --- lanes --------------------------------------------------------------------------------------------

const LANE_STATES: Record<Lane["state"], string> = { running: "Running", done: "Done", failed: "Failed", halted: "Stopped" };

export function makeLane(lane: Lane): HTMLElement {
  const details = h("details", { class: "lane", open: true, id: `lane-${lane.taskId}` });
  details.append(
    h("summary", { class: "lane-head" }),
    h("p", { class: "lane-failure", hidden: true, role: "alert" }),
    h("ul", { class: "feed" }),
    h("details", { class: "thinking" }),
    h("details", { class: "findings", hidden: true }),
  );
  return details;
}

export function updateLane(element: HTMLElement, lane: Lane): void {
  element.className = `lane ${lane.state}`;
  const head = element.querySelector(".lane-head") as HTMLElement;
  const facts: string[] = [];
  if (lane.model) facts.push(lane.model);
  if (typeof lane.done?.model_calls === "number") facts.push(plural(lane.done.model_calls, "model call"));
  if (typeof lane.done?.total_tokens === "number") facts.push(`${formatTokens(lane.done.total_tokens)} tokens`);
  if (typeof lane.done?.tool_calls === "number") facts.push(plural(lane.done.tool_calls, "tool call"));
  replaceChildren(
    head,
    h("span", { class: `lane-state ${lane.state}`, text: LANE_STATES[lane.state] }),
    " ",
    h("strong", { class: "lane-label", text: laneLabel(lane) }),
    lane.unit ? h("span", { class: "lane-unit", text: lane.unit }) : null,
    facts.length ? h("span", { class: "muted lane-facts", text: facts.join(" · ") }) : null,
  );
  const failure = element.querySelector(".lane-failure") as HTMLElement;
  failure.hidden = !lane.failure;
  failure.textContent = lane.failure ?? "";
  renderFeed(element.querySelector(":scope > .feed") as HTMLElement, lane.feed);
  renderThoughts(element.querySelector(":scope > .thinking") as HTMLDetailsElement, lane.thoughts);
  renderFindings(element.querySelector(":scope > .findings") as HTMLDetailsElement, lane);
}

const HALTED: Record<string, string> = {
  budget: "the budget ran out",
  loop_guard: "it kept repeating a call",
  runaway_guard: "its output ran away",
  step_limit: "it neared its step limit",
  user: "you asked the run to stop",
};

function renderFindings(details: HTMLDetailsElement, lane: Lane): void {
  const found = lane.findings;
  details.hidden = !found;
  if (!found) return;
  const findings = found.findings ?? [];
  const gaps = found.gaps ?? [];
  replaceChildren(
    details,
    h("summary", { text: `Findings: ${findings.length}${gaps.length ? ` · ${plural(gaps.length, "gap")}` : ""}${found.halted ? ` · stopped because ${HALTED[found.halted] ?? found.halted}` : ""}` }),
    found.summary ? h("p", { class: "findings-summary", text: found.summary }) : null,
    findings.length
      ? h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            null,
            h("thead", null, h("tr", null, h("th", { scope: "col", text: "Finding" }), h("th", { scope: "col", text: "Evidence" }), h("th", { scope: "col", text: "Source" }))),
            h(
              "tbody",
              null,
              findings.map((finding) =>
                h(
                  "tr",
                  null,
                  h("td", { text: finding.finding }),
                  h("td", null, finding.evidence ? h("q", { text: finding.evidence }) : h("span", { class: "muted", text: "no quote" })),
                  h("td", null, /^https?:/i.test(finding.source) ? externalLink(finding.source, domainOf(finding.source)) : finding.source),
                ),
              ),
            ),
          ),
        )
      : null,
    gaps.length ? h("div", { class: "gaps" }, h("h4", { text: "Gaps" }), h("ul", null, gaps.map((gap) => h("li", { text: gap })))) : null,
    fieldList(extraFields(found, ["unit", "summary", "findings", "gaps", "halted"])),
  );
}
