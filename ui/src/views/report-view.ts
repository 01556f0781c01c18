// The delivered report: Markdown rendered and sanitized, its charts drawn by the server (chart-view.ts), `[n]`
// linked to the sources list, each source with
// its verification status and the quote that backs it, each checked claim's verdict in place, a partial
// report marked as such, and copy / download buttons.

import { REPORT_FORMATS, reportUrl } from "../api";
import { h, replaceChildren } from "../dom";
import { extraFields } from "../protocol";
import type { EventOf } from "../protocol";
import { checkedForMeaning, citationWords, decidedByWords, verdictWords } from "../format";
import type { Citation, EvidenceEntry, Finding, ThreadValues } from "../model";
import {
  CHART_CLOSE,
  CHART_OPEN,
  CITATION_RE,
  MARK_CLOSE,
  MARK_ID_END,
  MARK_OPEN,
  UNVERIFIED_MARK,
  chartPlaceholders,
  citedNumbers,
  claimsFrom,
  isFlagged,
  matchingSentence,
  sameUrl,
  sentenceMarks,
  sourceEntries,
  splitSources,
  withSentinels,
} from "../markdown";
import type { Claim, DeliveredChart, Flag, ReportSource } from "../markdown";
import { chartFigure } from "./chart-view";
import { domainOf, externalLink, fieldList, markdownFragment, siteBadge } from "./common";

export interface ReportContext {
  /** Unique per turn, for the anchors of its sources. */
  idPrefix: string;
  report: EventOf<"report">;
  values: ThreadValues;
  findings: Finding[];
  question: string;
  threadId?: string;
  /** The run that delivered the report, so its charts are drawn from that run's state. */
  runId?: string;
  /** The thread's stored evidence records, texts included (GET /evidence/{thread_id}). */
  loadEvidence: () => Promise<EvidenceEntry[]>;
}

interface SourceView extends ReportSource {
  anchor: string;
  citation?: Citation;
  quotes: string[];
}

export function renderReport(ctx: ReportContext): HTMLElement {
  const { report, values } = ctx;
  const sections = splitSources(report.markdown);
  const { text: bodyText, charts } = chartPlaceholders(sections.body);
  const sources = sourceViews(ctx, sections.sources, bodyText);
  const claims = claimsFrom(values);
  const marks = sentenceMarks(bodyText, claims);
  const headingId = `${ctx.idPrefix}-report`;

  const body = h("div", { class: "report-body markdown" });
  body.append(markdownFragment(withSentinels(bodyText, marks) + sections.after));
  placeCharts(body, charts, ctx);
  wrapMarks(body, marks, ctx, sources);
  linkCitations(body, sources);
  const section = h(
    "section",
    { class: `report${report.partial ? " partial" : ""}`, "aria-labelledby": headingId },
    h(
      "div",
      { class: "report-bar" },
      h("h2", { id: headingId, class: "section-label", text: report.partial ? "Partial report" : "Report" }),
      h("div", { class: "report-actions" }, copyButton(report.markdown), downloadButton(ctx), reportLinks(ctx)),
    ),
    report.partial
      ? h("p", { class: "partial-banner", role: "note" }, h("strong", { text: "Incomplete. " }), "The run stopped before it finished; this report was assembled from what it found so far.")
      : null,
    body,
    claims.length ? claimsList(claims, report.claims) : null,
    sources.length ? sourcesList(sources, headingId) : null,
    fieldList(extraFields(report, ["markdown", "partial", "claims"])),
  );
  section.addEventListener("click", (event) => {
    const link = (event.target as Element).closest("a.cite-link") as HTMLAnchorElement | null;
    if (!link) return;
    event.preventDefault();
    const target = section.querySelector<HTMLElement>(`[id="${link.hash.slice(1)}"]`);
    if (!target) return;
    target.scrollIntoView({ block: "center", behavior: "smooth" });
    target.focus({ preventScroll: true });
    target.classList.remove("flash");
    void target.offsetWidth;
    target.classList.add("flash");
  });
  return section;
}

/** Swaps each chart's placeholder paragraph for the chart (before the citations are linked, so its [n] are too). */
function placeCharts(root: HTMLElement, charts: DeliveredChart[], ctx: ReportContext): void {
  if (!charts.length) return;
  const placeholder = new RegExp(`^${CHART_OPEN}(\\d+)${CHART_CLOSE}$`);
  for (const paragraph of Array.from(root.querySelectorAll("p"))) {
    const match = placeholder.exec(paragraph.textContent?.trim() ?? "");
    const chart = match ? charts[Number(match[1])] : undefined;
    if (chart) paragraph.replaceWith(chartFigure(chart, Number(match![1]) + 1, ctx.threadId, ctx.runId));
  }
}

function sourceViews(ctx: ReportContext, sourcesText: string, body: string): SourceView[] {
  const citations = ctx.values.cited_sources ?? [];
  let entries = sourceEntries(sourcesText);
  if (!entries.length && CITATION_RE.test(body)) {
    entries = citations.map((c) => ({ index: c.index, title: c.title || c.url || `Source ${c.index}`, url: c.url ?? undefined }));
  }
  CITATION_RE.lastIndex = 0;
  return entries.map((entry) => ({
    ...entry,
    anchor: `${ctx.idPrefix}-src-${entry.index}`,
    citation: citations.find((c) => c.index === entry.index),
    quotes: [...new Set(ctx.findings.filter((f) => f.evidence && sameUrl(f.source, entry.url)).map((f) => f.evidence!))],
  }));
}

function verification(source: SourceView): { words: string; state: string } {
  const citation = source.citation;
  if (!citation) return { words: "Not checked", state: "unknown" };
  return { words: citationWords(citation.reason, citation.verified), state: citation.verified ? "verified" : "unverified" };
}

function sourcesList(sources: SourceView[], headingId: string): HTMLElement {
  return h(
    "section",
    { class: "sources", "aria-labelledby": `${headingId}-sources` },
    h("h3", { id: `${headingId}-sources`, text: "Sources" }),
    h(
      "ol",
      null,
      sources.map((source) => {
        const { words, state } = verification(source);
        const quote = source.quotes[0];
        const quoteId = `${source.anchor}-quote`;
        const detail = source.citation?.detail;
        return h(
          "li",
          { id: source.anchor, tabindex: -1, class: "source", title: quote ? `“${quote}”` : undefined },
          h("span", { class: "source-number", text: `[${source.index}]` }),
          h(
            "div",
            { class: "source-main" },
            h(
              "div",
              { class: "source-title" },
              source.url ? siteBadge(domainOf(source.url)) : null,
              source.url ? externalLink(source.url, source.title) : h("span", { text: source.title }),
              source.url ? h("span", { class: "muted source-domain", text: domainOf(source.url) }) : null,
            ),
            h(
              "div",
              { class: "source-status" },
              h("span", { class: `badge ${state}`, text: words }),
              detail ? h("span", { class: "muted", text: ` ${detail}` }) : null,
              quote
                ? h("button", {
                    type: "button",
                    class: "link-button",
                    "aria-expanded": "false",
                    "aria-controls": quoteId,
                    text: source.quotes.length > 1 ? `Quotes (${source.quotes.length})` : "Quote",
                    on: {
                      click: (event: Event) => {
                        const button = event.currentTarget as HTMLButtonElement;
                        const box = document.getElementById(quoteId)!;
                        box.hidden = !box.hidden;
                        button.setAttribute("aria-expanded", String(!box.hidden));
                      },
                    },
                  })
                : null,
            ),
            quote ? h("div", { id: quoteId, class: "quotes", hidden: true }, source.quotes.map((q) => h("blockquote", { text: q }))) : null,
          ),
        );
      }),
    ),
  );
}

/** The claims with their verdicts, under the server's own coverage sentence (domain/claims.py summarise_claims):
 * the numbers every surface shows, never counted again here. */
function claimsList(claims: Claim[], summary: EventOf<"report">["claims"]): HTMLElement {
  const flagged = claims.filter((c) => isFlagged(c.verdict)).length;
  const judged = claims.filter((c) => c.decidedBy === "judged").length;
  const parts = [summary?.coverage || `${claims.length} claims`];
  if (judged) parts.push(`${judged} judged by the model`);
  return h(
    "details",
    { class: "claims", open: flagged > 0 },
    h("summary", { text: parts.join(" · ") }),
    h(
      "ul",
      null,
      claims.map((claim) => {
        const badge = isFlagged(claim.verdict) ? "unverified" : checkedForMeaning(claim.verdict, claim.decidedBy) ? "verified" : "unknown";
        const how = decidedByWords(claim.decidedBy);
        return h(
          "li",
          { class: isFlagged(claim.verdict) ? "flagged" : checkedForMeaning(claim.verdict, claim.decidedBy) ? "supported" : "unchecked", "data-decided-by": claim.decidedBy ?? "" },
          h("span", { class: `badge ${badge}`, text: verdictWords(claim.verdict, claim.decidedBy) }),
          " ",
          claim.text,
          claim.indexes.length ? h("span", { class: "muted", text: ` cites ${claim.indexes.map((n) => `[${n}]`).join(" ")}` }) : null,
          how ? h("span", { class: "muted how", text: ` · ${how}` }) : null,
          claim.why ? h("span", { class: "muted", text: ` · ${claim.why}` }) : null,
        );
      }),
    ),
  );
}

// --- in-place marks -----------------------------------------------------------------------------------

interface Position {
  node: Text;
  offset: number;
}

/** Turns the sentinel pairs of withSentinels into <mark> elements, whatever inline markup lies between. */
function wrapMarks(root: HTMLElement, marks: Flag[], ctx: ReportContext, sources: SourceView[]): void {
  const opens = new Map<number, Position>();
  const closes: Position[] = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node as Text);
  for (const node of texts) {
    const value = node.data;
    for (let i = 0; i < value.length; i += 1) {
      if (value[i] === MARK_OPEN) {
        const end = value.indexOf(MARK_ID_END, i);
        opens.set(Number(value.slice(i + 1, end)), { node, offset: i });
      } else if (value[i] === MARK_CLOSE) {
        closes.push({ node, offset: i });
      }
    }
  }
  const ordered = [...opens.entries()].sort(([a], [b]) => a - b);
  // Last first: wrapping a range splits text nodes after it, never before it.
  for (let k = ordered.length - 1; k >= 0; k -= 1) {
    const [n, open] = ordered[k]!;
    const close = closes[k];
    const flag = marks[n];
    if (!close || !flag) continue;
    const range = document.createRange();
    range.setStart(open.node, open.offset);
    range.setEnd(close.node, close.offset + 1);
    const mark = markElement(flag, ctx, sources);
    mark.append(range.extractContents());
    range.insertNode(mark);
  }
  // Drop the sentinels, wherever they ended up.
  const strip = new RegExp(`${MARK_OPEN}\\d+${MARK_ID_END}|${MARK_CLOSE}`, "g");
  const again = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = again.nextNode(); node; node = again.nextNode()) {
    const text = node as Text;
    if (strip.test(text.data)) text.data = text.data.replace(strip, "");
    strip.lastIndex = 0;
  }
}

function flagWords(flag: Flag, sources: SourceView[]): { verdict: string; why?: string; flagged: boolean } {
  if (flag.claim) {
    const claim = flag.claim;
    const how = decidedByWords(claim.decidedBy);
    const why = [claim.why, how ? `(${how})` : ""].filter(Boolean).join(" ");
    return { verdict: verdictWords(claim.verdict, claim.decidedBy), why: why || undefined, flagged: isFlagged(claim.verdict) };
  }
  const cited = sources.filter((s) => flag.indexes.includes(s.index) && s.citation && !s.citation.verified);
  const first = cited[0]?.citation;
  return { verdict: first ? citationWords(first.reason, first.verified) : "Unverified: the cited text does not back this", why: first?.detail, flagged: true };
}

function markElement(flag: Flag, ctx: ReportContext, sources: SourceView[]): HTMLElement {
  const words = flagWords(flag, sources);
  const mark = h("mark", {
    class: `claim ${words.flagged ? "flagged" : "supported"}`,
    tabindex: 0,
    role: "button",
    "aria-expanded": "false",
    title: words.why ? `${words.verdict}: ${words.why}` : words.verdict,
  });
  let panel: HTMLElement | null = null;
  const toggle = () => {
    if (panel) {
      panel.remove();
      panel = null;
      mark.setAttribute("aria-expanded", "false");
      return;
    }
    panel = h("span", { class: "why", role: "note" }, h("strong", { text: words.verdict }), words.why ? ` — ${words.why}` : "", h("span", { class: "why-source", text: " Looking for the matching sentence of the source…" }));
    mark.after(panel);
    mark.setAttribute("aria-expanded", "true");
    void showSourceSentence(panel.querySelector(".why-source") as HTMLElement, flag, mark.textContent ?? "", ctx, sources);
  };
  mark.addEventListener("click", (event) => {
    if ((event.target as Element).closest("a")) return;
    toggle();
  });
  mark.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      toggle();
    }
  });
  return mark;
}

async function showSourceSentence(target: HTMLElement, flag: Flag, sentence: string, ctx: ReportContext, sources: SourceView[]): Promise<void> {
  const cited = sources.filter((s) => flag.indexes.includes(s.index));
  if (!cited.length) {
    target.textContent = " It cites no source in the list.";
    return;
  }
  const checked = flag.claim?.sentences ?? [];
  if (checked.length) {
    replaceChildren(target, " In the source: ", checked.flatMap((s) => [h("q", { class: "source-sentence", text: s.sentence }), h("span", { class: "muted", text: ` [${s.index}]` })]));
    return;
  }
  let records: EvidenceEntry[];
  try {
    records = await ctx.loadEvidence();
  } catch (error) {
    target.textContent = ` The source text could not be loaded: ${(error as Error).message}`;
    return;
  }
  const claimText = flag.claim?.text ?? sentence.replace(CITATION_RE, "").replaceAll(UNVERIFIED_MARK, "");
  CITATION_RE.lastIndex = 0;
  const found: HTMLElement[] = [];
  for (const source of cited) {
    const byId = source.citation?.evidence_id ? records.filter((r) => r.id === source.citation!.evidence_id) : [];
    const byUrl = records.filter((r) => sameUrl(r.url, source.url)).sort((a, b) => (a.kind === "page" ? -1 : 0) - (b.kind === "page" ? -1 : 0));
    for (const record of [...byId, ...byUrl]) {
      const match = record.text ? matchingSentence(record.text, claimText, flag.claim?.tokens) : null;
      if (match) {
        found.push(h("q", { class: "source-sentence", text: match }), h("span", { class: "muted", text: ` [${source.index}]` }));
        break;
      }
    }
  }
  if (found.length) replaceChildren(target, " In the source: ", found);
  else target.textContent = " No sentence of the cited source's stored text matches it.";
}

function linkCitations(root: HTMLElement, sources: SourceView[]): void {
  const byIndex = new Map(sources.map((s) => [s.index, s]));
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => ((node.parentElement?.closest("code, pre, a") ?? null) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node as Text);
  for (const node of texts) {
    const value = node.data;
    const pattern = new RegExp(`${CITATION_RE.source}|\\[unverified\\]`, "g");
    if (!pattern.test(value)) continue;
    pattern.lastIndex = 0;
    const fragment = document.createDocumentFragment();
    let at = 0;
    for (const match of value.matchAll(pattern)) {
      fragment.append(value.slice(at, match.index));
      if (match[0] === UNVERIFIED_MARK) {
        fragment.append(h("span", { class: "unverified-tag", text: "unverified" }));
      } else {
        const numbers = citedNumbers(match[1]!);
        fragment.append(
          h(
            "sup",
            { class: "cite" },
            "[",
            numbers.map((n, i) => {
              const source = byIndex.get(n);
              const separator = i > 0 ? ", " : "";
              if (!source) return [separator, h("span", { class: "dangling", title: "No such source in the list", text: String(n) })];
              const quote = source.quotes[0];
              return [
                separator,
                h("a", {
                  class: "cite-link",
                  href: `#${source.anchor}`,
                  "aria-label": `Source ${n}: ${source.title}`,
                  title: quote ? `${source.title} — “${quote}”` : source.title,
                  text: String(n),
                }),
              ];
            }),
            "]",
          ),
        );
      }
      at = match.index! + match[0].length;
    }
    fragment.append(value.slice(at));
    node.replaceWith(fragment);
  }
}

// --- actions ------------------------------------------------------------------------------------------

function copyButton(markdown: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "secondary", text: "Copy as Markdown" });
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(markdown);
      button.textContent = "Copied";
    } catch {
      const area = h("textarea", { class: "offscreen", "aria-hidden": "true" });
      area.value = markdown;
      document.body.appendChild(area);
      area.select();
      const copied = document.execCommand("copy");
      area.remove();
      button.textContent = copied ? "Copied" : "Copy failed: select the text instead";
    }
    setTimeout(() => (button.textContent = "Copy as Markdown"), 2500);
  });
  return button;
}

/** The report as a document to hand on, rendered by the server (`GET /reports/{thread_id}`): one link per format. */
function reportLinks(ctx: ReportContext): HTMLElement | null {
  if (!ctx.threadId) return null;
  const threadId = ctx.threadId;
  return h(
    "span",
    { class: "report-downloads", role: "group", "aria-label": "Download the report" },
    "Download: ",
    ...REPORT_FORMATS.map(([format, label]) =>
      h("a", { class: "button secondary", href: reportUrl(threadId, format), download: "", text: label }),
    ),
  );
}

function downloadButton(ctx: ReportContext): HTMLElement {
  const wrap = h("span", { class: "download" });
  const button = h("button", { type: "button", class: "secondary", text: "Download evidence (JSON)" });
  const problem = h("span", { class: "inline-error", role: "alert" });
  button.addEventListener("click", async () => {
    problem.textContent = "";
    let evidence: EvidenceEntry[];
    try {
      evidence = await ctx.loadEvidence();
    } catch (error) {
      problem.textContent = ` ${(error as Error).message}`;
      return;
    }
    const payload = {
      question: ctx.question,
      thread_id: ctx.threadId,
      report: ctx.report.markdown,
      partial: ctx.report.partial ?? false,
      sources: ctx.values.sources ?? [],
      claims: ctx.values.citations ?? [],
      cited_sources: ctx.values.cited_sources ?? [],
      evidence,
    };
    const url = URL.createObjectURL(new Blob([JSON.stringify(payload, null, 2)], { type: "application/json" }));
    const link = h("a", { href: url, download: `evidence-${ctx.threadId ?? "report"}.json`, class: "offscreen" });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  wrap.append(button, problem);
  return wrap;
}
