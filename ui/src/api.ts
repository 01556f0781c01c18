// The agent server through the official LangGraph JS SDK, plus the product's own routes (routes.py).

import { Client } from "@langchain/langgraph-sdk/client";

import { corporaOf, searchAnswerOf } from "./corpus";
import type { CorpusSearchAnswer, CorpusSummary } from "./corpus";
import type { EvidenceEntry } from "./model";
import { isRecord } from "./model";
import type { ScheduleSummary } from "./views/watching";

export const GRAPH_ID = "deep_research_agent";
/**
 * The agents' words come as `messages-tuple` (parts named `messages`, with the sub-graph's namespace) rather
 * than `messages` (`messages/partial`, `messages/complete`): langgraph-api keeps a resumable run's parts for
 * a later join only under the mode names the run asked for, and the `messages/*` names never match, so after
 * a reload the narration would be gone. Same information, and it replays.
 */
export const STREAM_MODES: ("messages-tuple" | "updates" | "custom")[] = ["messages-tuple", "updates", "custom"];
/** Where a client asks a running run to wrap up or stop (protocol/events.py STOP_REQUESTS_NAMESPACE). */
export const STOP_REQUESTS_NAMESPACE = ["deep_research_agent", "stop_requests"];
/** Where a client steers a running run: one item per message under the run id (protocol/events.py steer_namespace). */
export function steerNamespace(runId: string): string[] {
  return [...STOP_REQUESTS_NAMESPACE, "steer", runId];
}

/** The API's root: the server writes its mount prefix (usually "") into <meta name="dra-root"> of the page. */
export function rootPath(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="dra-root"]')?.content ?? "";
  return meta === "__ROOT__" ? "" : meta.replace(/\/$/, "");
}

export function apiRoot(): string {
  return `${location.origin}${rootPath()}`;
}

export function makeClient(apiUrl: string): Client {
  return new Client({ apiUrl, callerOptions: { maxRetries: 2 } });
}

/** What went wrong, with the detail the server sent (`{"detail": ...}` bodies of langgraph-api). */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const http = error as Error & { status?: number; text?: string };
  if (typeof http.status === "number") {
    let detail = http.text ?? "";
    try {
      const body = JSON.parse(detail);
      const inner = isRecord(body) ? (body.detail ?? body.message ?? body.error) : body;
      if (typeof inner === "string") detail = inner;
      else if (Array.isArray(inner)) detail = inner.map((item) => (isRecord(item) && typeof item.msg === "string" ? item.msg : JSON.stringify(item))).join("; ");
      else if (inner !== undefined) detail = JSON.stringify(inner);
    } catch {
      // not JSON: the text as it came
    }
    return `HTTP ${http.status}${detail ? `: ${detail}` : ""}`;
  }
  return error.message || error.name;
}

/** The formats `GET /reports/{thread_id}?format=` renders the delivered report in, with their button labels. */
export const REPORT_FORMATS = [
  ["pdf", "PDF"],
  ["docx", "Word"],
  ["html", "HTML"],
  ["md", "Markdown"],
] as const;

/** Where the thread's delivered report downloads as a document (`GET /reports/{thread_id}?format=`). */
export function reportUrl(threadId: string, format: string): string {
  return `${rootPath()}/reports/${encodeURIComponent(threadId)}?format=${encodeURIComponent(format)}`;
}

/** A JSON GET on the product's own routes; a refusal becomes an error with the server's `detail`. */
async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const text = await response.text();
  if (!response.ok) {
    let detail = text;
    try {
      const body = JSON.parse(text);
      if (isRecord(body) && typeof body.detail === "string") detail = body.detail;
    } catch {
      // keep the text
    }
    throw new Error(`HTTP ${response.status}: ${detail || response.statusText}`);
  }
  return JSON.parse(text) as unknown;
}

/** Every evidence record the thread's runs stored, texts included (`GET /evidence/{thread_id}`). */
export async function fetchEvidence(apiUrl: string, threadId: string): Promise<EvidenceEntry[]> {
  return (await getJson(`${apiUrl}/evidence/${encodeURIComponent(threadId)}`)) as EvidenceEntry[];
}

/** The caller's schedules as the Watching list shows them (`GET /schedules`, schedules/listing.py). */
export async function fetchSchedules(apiUrl: string): Promise<ScheduleSummary[]> {
  const body = await getJson(`${apiUrl}/schedules`);
  return isRecord(body) && Array.isArray(body.schedules) ? (body.schedules as ScheduleSummary[]) : [];
}

/** The corpora this server can search (`GET /corpora`). */
export async function fetchCorpora(apiUrl: string): Promise<CorpusSummary[]> {
  return corporaOf(await getJson(`${apiUrl}/corpora`));
}

/** One corpus searched by meaning and words, as the research units search it (`GET /corpora/search`). */
export async function searchCorpus(apiUrl: string, corpus: string, query: string, k = 10): Promise<CorpusSearchAnswer> {
  const params = new URLSearchParams({ corpus, q: query, k: String(k) });
  return searchAnswerOf(await getJson(`${apiUrl}/corpora/search?${params}`));
}

/** A chart of a delivered report, drawn by the server; a run's own when known, so an earlier turn keeps its picture. */
export function chartUrl(threadId: string, runId: string | undefined, chartId: string): string {
  const run = runId ? `/${encodeURIComponent(runId)}` : "";
  return `${rootPath()}/charts/${encodeURIComponent(threadId)}${run}/${encodeURIComponent(chartId)}.svg`;
}
