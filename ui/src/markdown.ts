// The citation anatomy of a report, as report/markdown.py reads it (inline `[n]`, a closing Sources section of
// `[n] Title — URL` lines), and where in the report each checked claim sits. Pure string work, tested in node.

export const CITATION_RE = /\[(\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*)\](?![(:])/g;
export const UNVERIFIED_MARK = "[unverified]";
const SOURCES_HEADING_RE = /^(#{1,6})[ \t]*(?:sources|references|bibliography)[ \t]*:?[ \t]*$/gim;
const HEADING_RE = /^(#{1,6})[ \t]+\S/gm;
const FENCE_RE = /^[ \t]*(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^[ \t]*\1[ \t]*$|(?![\s\S]))/gm;
const INLINE_CODE_RE = /(`+)(?!`).+?(?<!`)\1(?!`)/g;
const ENTRY_RE = /^[ \t]*(?:[-*+][ \t]+)?\[(\d+)\]:?(.*)$|^[ \t]*(\d+)[.)]((?:[ \t].*)?)$/;
const URL_RE = /https?:\/\/[^\s<>\]"'`]+/i;
const MAX_RANGE = 50;

/** `text` with fenced blocks and inline code blanked out, same length, so offsets stay valid. */
export function maskCode(text: string): string {
  const blank = (match: string) => match.replace(/[^\n]/g, " ");
  return text.replace(FENCE_RE, blank).replace(INLINE_CODE_RE, blank);
}

export interface Sections {
  body: string;
  sources: string;
  after: string;
}

/** Cut at the last Sources heading outside code; the section ends at the next heading of its level or above. */
export function splitSources(markdown: string): Sections {
  const masked = maskCode(markdown);
  const headings = [...masked.matchAll(SOURCES_HEADING_RE)];
  const heading = headings[headings.length - 1];
  if (!heading || heading.index === undefined) return { body: markdown, sources: "", after: "" };
  const level = heading[1]!.length;
  const from = heading.index + heading[0].length;
  let end = markdown.length;
  HEADING_RE.lastIndex = 0;
  for (const following of masked.slice(from).matchAll(HEADING_RE)) {
    if (following[1]!.length <= level) {
      end = from + following.index!;
      break;
    }
  }
  return { body: markdown.slice(0, heading.index), sources: markdown.slice(heading.index, end), after: markdown.slice(end) };
}

export interface ReportSource {
  index: number;
  title: string;
  url?: string;
}

function cleanUrl(url: string): string {
  let out = url.replace(/[.,;:>]+$/, "");
  while (out.endsWith(")") && (out.match(/\)/g)?.length ?? 0) > (out.match(/\(/g)?.length ?? 0)) {
    out = out.slice(0, -1).replace(/[.,;:>]+$/, "");
  }
  return out;
}

/** Numbered entries of a Sources section (`[n] …`, `- [n] …`, `[n]: …` or `n. …`). */
export function sourceEntries(sources: string): ReportSource[] {
  const entries: ReportSource[] = [];
  for (const line of sources.split(/\r?\n/)) {
    const match = ENTRY_RE.exec(line);
    if (!match) continue;
    const index = Number(match[1] ?? match[3]);
    const rest = (match[1] !== undefined ? match[2] : match[4]) ?? "";
    const found = URL_RE.exec(rest);
    const url = found ? cleanUrl(found[0]) : undefined;
    let title = url ? rest.replace(url, "") : rest;
    title = title.replace(/\[([^\]]*)\]\(\s*\)/g, "$1").replace(/\(\s*\)|<\s*>/g, "");
    title = title.replace(/^[\s\-–—:|*_·.,]+|[\s\-–—:|*_·.,]+$/g, "");
    entries.push({ index, title: title || url || `Source ${index}`, url });
  }
  return entries;
}

/** The numbers one citation marker cites: `1`, `1, 2`, `1-3`. */
export function citedNumbers(inner: string): number[] {
  const numbers: number[] = [];
  for (const part of inner.split(",")) {
    const bounds = part.trim().split(/\s*[-–]\s*/).map(Number);
    const [low, high] = bounds;
    if (bounds.length === 2 && low !== undefined && high !== undefined && low <= high && high <= low + MAX_RANGE) {
      for (let n = low; n <= high; n += 1) numbers.push(n);
    } else {
      numbers.push(...bounds.filter((n) => Number.isFinite(n)));
    }
  }
  return numbers;
}

// --- claims ---------------------------------------------------------------------------------------------

export interface Claim {
  text: string;
  indexes: number[];
  verdict: string;
  tokens: string[];
  why?: string;
  /** How the verdict was decided: figures_and_quotes, names_and_direction, judged or not_checked. */
  decidedBy?: string;
  /** The nearest sentence of each cited source, as the claim check found it (or the judge's deciding one). */
  sentences?: { index: number; sentence: string }[];
}

function numbers(value: unknown): number[] {
  if (typeof value === "number") return [value];
  if (!Array.isArray(value)) return [];
  return value.filter((n): n is number => typeof n === "number");
}

function strings(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.map((token) => (typeof token === "string" ? token : String(token)));
}

/** A claim entry of the thread state's `citations` (report/claims.py): one per checked sentence. */
export interface ClaimEntry {
  claim: string;
  indexes?: number[];
  verdict: string;
  tokens?: string[];
  detail?: string;
  decided_by?: string;
  sources?: {
    index: number;
    url?: string | null;
    title?: string;
    evidence_id?: string | null;
    sentence?: string | null;
    deciding?: boolean;
  }[];
}

/** The checked claims in the thread state's `citations`, in report order. */
export function claimsFrom(values: { citations?: unknown }): Claim[] {
  if (!Array.isArray(values.citations)) return [];
  return (values.citations as ClaimEntry[])
    .filter((entry) => typeof entry?.claim === "string" && typeof entry.verdict === "string")
    .map((entry) => ({
      text: entry.claim,
      indexes: numbers(entry.indexes),
      verdict: entry.verdict,
      tokens: strings(entry.tokens),
      why: entry.detail || undefined,
      decidedBy: typeof entry.decided_by === "string" ? entry.decided_by : undefined,
      sentences: (entry.sources ?? [])
        .filter((source) => typeof source.sentence === "string" && source.sentence)
        .map((source) => ({ index: source.index, sentence: source.sentence as string })),
    }));
}

/** Whether a claim was delivered marked [unverified]: a check found it wrong or unbacked (domain/names.py ClaimVerdict.flags). */
export function isFlagged(verdict: string): boolean {
  return verdict !== "supported" && verdict !== "unchecked";
}

// --- where a sentence sits in the report --------------------------------------------------------------

const WORD_RE = /[\p{L}\p{N}][\p{L}\p{N}.,%/-]*/gu;

export function words(text: string): string[] {
  return (text.toLowerCase().match(WORD_RE) ?? []).map((word) => word.replace(/[.,]+$/, ""));
}

/** How much of `wanted` (numbers count triple) `candidate` contains, from 0 to 1. */
export function overlap(wanted: string[], candidate: string): number {
  if (!wanted.length) return 0;
  const have = new Set(words(candidate));
  let total = 0;
  let found = 0;
  for (const word of wanted) {
    const weight = /\d/.test(word) ? 3 : word.length > 3 ? 1 : 0.25;
    total += weight;
    if (have.has(word)) found += weight;
  }
  return total ? found / total : 0;
}

export interface Span {
  start: number;
  end: number;
}

/** Sentences of `text` as spans, cut after . ! ? and at line breaks, citation markers kept with their sentence. */
export function sentenceSpans(text: string): Span[] {
  const spans: Span[] = [];
  const cut = /(?:[.!?](?:\s*\[[^\]\n]*\])*(?=\s|$))|\n/g;
  let start = 0;
  for (const match of text.matchAll(cut)) {
    const end = match.index! + match[0].length;
    pushSpan(text, start, end, spans);
    start = end;
  }
  pushSpan(text, start, text.length, spans);
  return spans;
}

function pushSpan(text: string, start: number, end: number, spans: Span[]): void {
  let from = start;
  let to = end;
  while (from < to && /\s/.test(text[from]!)) from += 1;
  // List markers, heading hashes and quote marks open a block, not the sentence.
  const opener = /^(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)/.exec(text.slice(from, to));
  if (opener) from += opener[0].length;
  while (to > from && /\s/.test(text[to - 1]!)) to -= 1;
  if (to > from) spans.push({ start: from, end: to });
}

function normalise(text: string): string {
  return text
    .replace(CITATION_RE, " ")
    .replaceAll(UNVERIFIED_MARK, " ")
    .replace(/[*_`~]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.!?;:]+$/, "")
    .toLowerCase();
}

/**
 * The span of the report's sentence that states `claim`: the sentence holding it verbatim (with its citation
 * markers), else the sentence sharing most of its words.
 */
export function locateClaim(body: string, claim: string): Span | null {
  const masked = maskCode(body);
  const trimmed = claim.trim();
  const exact = trimmed ? masked.indexOf(trimmed) : -1;
  if (exact >= 0) {
    const end = exact + trimmed.length;
    const sentence = sentenceSpans(masked).find((span) => span.start <= exact && end <= span.end);
    return sentence ?? { start: exact, end };
  }
  const wanted = normalise(claim);
  if (!wanted) return null;
  let best: Span | null = null;
  let bestScore = 0;
  const claimWords = words(wanted);
  for (const span of sentenceSpans(masked)) {
    const sentence = normalise(body.slice(span.start, span.end));
    if (!sentence) continue;
    if (sentence === wanted || sentence.includes(wanted)) return span;
    const score = overlap(claimWords, sentence);
    if (score > bestScore) {
      bestScore = score;
      best = span;
    }
  }
  return bestScore >= 0.6 ? best : null;
}

export interface Flag extends Span {
  /** Source numbers the sentence cites. */
  indexes: number[];
  claim?: Claim;
}

/** The sentences the report itself marks `[unverified]` (the delivery-time citation check). */
export function unverifiedSentences(body: string): Flag[] {
  const masked = maskCode(body);
  const flags: Flag[] = [];
  for (const span of sentenceSpans(masked)) {
    const sentence = masked.slice(span.start, span.end);
    if (!sentence.includes(UNVERIFIED_MARK)) continue;
    const indexes = [...sentence.matchAll(CITATION_RE)].flatMap((match) => citedNumbers(match[1]!));
    flags.push({ ...span, indexes });
  }
  return flags;
}

/**
 * Where to mark sentences in the body: every located claim, then every `[unverified]` sentence no claim
 * already covers. Spans never overlap, in text order.
 */
export function sentenceMarks(body: string, claims: Claim[]): Flag[] {
  const marks: Flag[] = [];
  const overlaps = (span: Span) => marks.some((mark) => span.start < mark.end && mark.start < span.end);
  // Only flagged claims are marked in place; supported ones are listed with the claims, the prose left alone.
  for (const claim of claims.filter((c) => isFlagged(c.verdict))) {
    const span = locateClaim(body, claim.text);
    if (span && !overlaps(span)) marks.push({ ...span, indexes: claim.indexes, claim });
  }
  for (const flag of unverifiedSentences(body)) if (!overlaps(flag)) marks.push(flag);
  return marks.sort((a, b) => a.start - b.start);
}

export const MARK_OPEN = "\uE000";
export const MARK_ID_END = "\uE001";
export const MARK_CLOSE = "\uE002";

/** `body` with private-use sentinels around each mark (`\uE000n\uE001…\uE002`), for the renderer to find. */
export function withSentinels(body: string, marks: Flag[]): string {
  let out = "";
  let at = 0;
  marks.forEach((mark, n) => {
    out += body.slice(at, mark.start) + MARK_OPEN + n + MARK_ID_END + body.slice(mark.start, mark.end) + MARK_CLOSE;
    at = mark.end;
  });
  return out + body.slice(at);
}

/** The sentence of a source text that best matches a claim: its tokens if the check named them, else its words. */
export function matchingSentence(sourceText: string, claim: string, tokens: string[] = []): string | null {
  const wanted = tokens.length ? tokens.flatMap((token) => words(token)) : words(normalise(claim));
  let best: string | null = null;
  let bestScore = 0;
  for (const span of sentenceSpans(sourceText)) {
    const sentence = sourceText.slice(span.start, span.end);
    const score = overlap(wanted, sentence);
    if (score > bestScore) {
      bestScore = score;
      best = sentence;
    }
  }
  return best && bestScore > 0 ? best.trim() : null;
}

export function sameUrl(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const norm = (url: string) => url.trim().replace(/#.*$/, "").replace(/\/+$/, "").replace(/^(https?:\/\/)([^/]+)/i, (_, scheme: string, host: string) => scheme.toLowerCase() + host.toLowerCase());
  return norm(a) === norm(b);
}

// --- images ---------------------------------------------------------------------------------------------

/** Whether an image address is this server's own (same origin as the page at `pageUrl`): the only images shown. */
export function isOwnImage(src: string, pageUrl: string): boolean {
  if (!src.trim()) return false;
  try {
    const page = new URL(pageUrl);
    const image = new URL(src, page);
    return (image.protocol === "http:" || image.protocol === "https:") && image.origin === page.origin;
  } catch {
    return false;
  }
}

/** What stands in for an image not shown: a link's words for a web address, a note for anything else. */
export function imageLabel(src: string, alt: string): string {
  const words = /^https?:/i.test(src) ? "Image" : "Image not shown";
  return alt.trim() ? `${words}: ${alt.trim()}` : words;
}

// --- charts ---------------------------------------------------------------------------------------------

/** A point of a delivered chart, with what the check found (domain/charts.py ChartRecord.to_block). */
export interface ChartPoint {
  x: string | number;
  y: number;
  cite: number | null;
  check: { verdict: string; reason?: string; sentence?: string };
}

/** A chart as the delivered report carries it: its spec, the checks of its points, whether it is drawn. */
export interface DeliveredChart {
  id: string;
  kind: string;
  title: string;
  x_label?: string;
  y_label?: string;
  unit?: string;
  points: ChartPoint[];
  drawn: boolean;
  caption: string;
  reason?: string;
}

const CHART_FENCE_RE = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*chart[ \t]*\n([\s\S]*?)^[ \t]*\1[ \t]*$\n?/gim;
export const CHART_OPEN = "\uE003";
export const CHART_CLOSE = "\uE004";

function deliveredChart(text: string): DeliveredChart | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof raw !== "object" || raw === null) return null;
  const chart = raw as Partial<DeliveredChart>;
  if (typeof chart.id !== "string" || typeof chart.title !== "string" || !Array.isArray(chart.points)) return null;
  const points = chart.points.filter((p) => p && typeof p.y === "number" && p.check && typeof p.check.verdict === "string");
  if (points.length !== chart.points.length) return null;
  return { ...chart, caption: String(chart.caption ?? ""), drawn: Boolean(chart.drawn), points } as DeliveredChart;
}

/**
 * The body with each delivered chart block replaced by a placeholder paragraph (`\uE003n\uE004`) for the renderer
 * to swap for the chart, and the charts in order. A block the product did not write (no checks) stays code.
 */
export function chartPlaceholders(body: string): { text: string; charts: DeliveredChart[] } {
  const charts: DeliveredChart[] = [];
  const text = body.replace(CHART_FENCE_RE, (block: string, _fence: string, inner: string) => {
    const chart = deliveredChart(inner);
    if (!chart) return block;
    charts.push(chart);
    return `\n${CHART_OPEN}${charts.length - 1}${CHART_CLOSE}\n\n`;
  });
  return { text, charts };
}

/** A number as the report writes it: `1,240`, `41.2`. */
export function chartValue(y: number): string {
  return Number.isInteger(y) ? y.toLocaleString("en-US") : y.toLocaleString("en-US", { maximumFractionDigits: 6 });
}

/** The notes' numbering: `¹`, `²`, … for the failing points in order. */
export function superscript(n: number): string {
  return String(n).replace(/\d/g, (d) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[Number(d)]!);
}
