// Searching the server's corpora (routes.py `GET /corpora` and `GET /corpora/search`): the answers as typed
// values, and what the search page shows of them. No DOM here, so the node tests read it directly.

import { isRecord } from "./model";

export interface CorpusSummary {
  name: string;
  title: string;
  description: string;
  documents: number;
  passages: number;
}

export interface CorpusHit {
  id: string;
  /** `<corpus title> — <document title> › <section> (<path>)` (corpora/locator.py title_of). */
  title: string;
  /** `corpus://<name>/<path>#<anchor>`: what a report cites. */
  url: string;
  score: number;
  /** About 36 words around the query's terms, each term between `**`. */
  snippet: string;
  path: string;
  anchor: string | null;
  text: string;
}

export interface CorpusSearchAnswer {
  corpus: string;
  query: string;
  /** `hybrid` (by meaning and words) or `keywords` (words only: the corpus is not embedded, or the embedder failed). */
  method: string;
  /** Why meaning was not used, or how much of the corpus is embedded so far; empty when nothing to say. */
  note: string;
  hits: CorpusHit[];
}

/** Bad JSON from the server, named rather than rendered half. */
export class UnexpectedAnswer extends Error {}

function text(value: unknown, field: string): string {
  if (typeof value !== "string") throw new UnexpectedAnswer(`the server's answer has no text ${field}`);
  return value;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

export function corporaOf(body: unknown): CorpusSummary[] {
  if (!isRecord(body) || !Array.isArray(body.corpora)) throw new UnexpectedAnswer("the server's answer lists no corpora");
  return body.corpora.filter(isRecord).map((corpus) => ({
    name: text(corpus.name, "name"),
    title: typeof corpus.title === "string" && corpus.title ? corpus.title : text(corpus.name, "name"),
    description: typeof corpus.description === "string" ? corpus.description : "",
    documents: count(corpus.documents),
    passages: count(corpus.passages),
  }));
}

export function searchAnswerOf(body: unknown): CorpusSearchAnswer {
  if (!isRecord(body) || !Array.isArray(body.hits)) throw new UnexpectedAnswer("the server's answer has no hits");
  return {
    corpus: text(body.corpus, "corpus"),
    query: text(body.query, "query"),
    method: text(body.method, "method"),
    note: typeof body.note === "string" ? body.note : "",
    hits: body.hits.filter(isRecord).map((hit) => ({
      id: text(hit.id, "id"),
      title: text(hit.title, "title"),
      url: text(hit.url, "url"),
      score: count(hit.score),
      snippet: typeof hit.snippet === "string" ? hit.snippet : "",
      path: text(hit.path, "path"),
      anchor: typeof hit.anchor === "string" && hit.anchor ? hit.anchor : null,
      text: typeof hit.text === "string" ? hit.text : "",
    })),
  };
}

/** A snippet cut into plain and marked (`**term**`) pieces, in order; marks never nest. */
export function snippetPieces(snippet: string): { text: string; marked: boolean }[] {
  const pieces: { text: string; marked: boolean }[] = [];
  const pattern = /\*\*(.+?)\*\*/g;
  let last = 0;
  for (let match = pattern.exec(snippet); match; match = pattern.exec(snippet)) {
    if (match.index > last) pieces.push({ text: snippet.slice(last, match.index), marked: false });
    pieces.push({ text: match[1]!, marked: true });
    last = match.index + match[0].length;
  }
  if (last < snippet.length) pieces.push({ text: snippet.slice(last), marked: false });
  return pieces;
}

/**
 * The hit's document and where in it: `notes/maintenance.md`, then the anchor a citation points at
 * (`#recalibration`, `#page=3`, `#slide=2`, `#sheet=Budget!A5`) when it has one.
 */
export function hitPlace(hit: CorpusHit): { document: string; anchor: string | null } {
  return { document: hit.path, anchor: hit.anchor ? `#${hit.anchor}` : null };
}

/** The hit's heading without the corpus title the whole page already names (title_of's `<corpus> — ` prefix). */
export function hitHeading(hit: CorpusHit, corpusTitle: string): string {
  const prefix = `${corpusTitle} — `;
  return corpusTitle && hit.title.startsWith(prefix) ? hit.title.slice(prefix.length) : hit.title;
}

const METHOD_WORDS: Record<string, string> = {
  hybrid: "by meaning and words",
  keywords: "by words only",
};

/** The line above the results: how many, for what, where, and how the corpus was searched. */
export function searchSummary(answer: CorpusSearchAnswer, corpusTitle: string): string {
  const how = METHOD_WORDS[answer.method] ?? answer.method;
  const found = answer.hits.length === 0 ? "No passage matches" : `${answer.hits.length} passage${answer.hits.length === 1 ? "" : "s"} for`;
  return `${found} \u201c${answer.query}\u201d in ${corpusTitle || answer.corpus}, searched ${how}.`;
}

/** What a search needs before it goes to the server; undefined when it can go. */
export function searchProblem(corpus: string, query: string): string | undefined {
  if (!corpus) return "Choose a corpus to search.";
  if (!query.trim()) return "Type what to look for.";
  return undefined;
}

/** The page's own URL for a search (`<root>/ui/search?corpus=&q=`), so a search can be reloaded and shared. */
export function searchPageUrl(root: string, corpus?: string, query?: string): string {
  const params = new URLSearchParams();
  if (corpus) params.set("corpus", corpus);
  if (query?.trim()) params.set("q", query.trim());
  const search = params.toString();
  return `${root}/ui/search${search ? `?${search}` : ""}`;
}
