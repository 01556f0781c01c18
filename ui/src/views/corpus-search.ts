// The search page (<root>/ui/search?corpus=&q=): one of the server's corpora searched by meaning and words,
// the way a research unit searches it, with each passage shown under its document and anchor.

import { errorText, fetchCorpora, searchCorpus } from "../api";
import { hitHeading, hitPlace, searchPageUrl, searchProblem, searchSummary, snippetPieces } from "../corpus";
import type { CorpusHit, CorpusSearchAnswer, CorpusSummary } from "../corpus";
import { h, replaceChildren } from "../dom";
import { problemBox } from "./turn";

export class CorpusSearchPage {
  readonly element: HTMLElement;
  private readonly corpusSelect: HTMLSelectElement;
  private readonly queryInput: HTMLInputElement;
  private readonly submit: HTMLButtonElement;
  private readonly formError: HTMLElement;
  private readonly problem: HTMLElement;
  private readonly results: HTMLElement;
  private corpora?: CorpusSummary[];
  /** Only the latest search draws: an older answer arriving late is dropped. */
  private generation = 0;

  constructor(
    private readonly apiUrl: string,
    private readonly root: string,
  ) {
    this.corpusSelect = h("select", { id: "corpus", name: "corpus" }) as HTMLSelectElement;
    this.queryInput = h("input", { id: "corpus-query", name: "q", type: "search", autocomplete: "off", placeholder: "e.g. how long may a gauge stay switched off?" }) as HTMLInputElement;
    this.submit = h("button", { type: "submit", class: "primary", text: "Search" }) as HTMLButtonElement;
    this.formError = h("p", { id: "corpus-search-error", class: "inline-error", role: "alert", hidden: true });
    this.queryInput.setAttribute("aria-describedby", "corpus-search-error");
    this.problem = h("div");
    this.results = h("div", { class: "corpus-results", "aria-live": "polite" });
    const form = h(
      "form",
      { class: "corpus-search-form card", role: "search", "aria-label": "Search your documents" },
      h("h2", { class: "search-title", text: "Search your documents" }),
      h("p", { class: "hint muted", text: "Ask in your own words: passages are found by meaning as well as by the words they share with your question." }),
      h(
        "div",
        { class: "search-fields" },
        h("div", { class: "option" }, h("label", { for: "corpus", text: "Corpus" }), this.corpusSelect),
        h("div", { class: "option grow" }, h("label", { for: "corpus-query", text: "Look for" }), this.queryInput),
        h("div", { class: "option submit" }, this.submit),
      ),
      this.formError,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.search(this.corpusSelect.value, this.queryInput.value);
    });
    this.element = h("section", { class: "corpus-search", "aria-labelledby": "search-title", hidden: true }, form, this.problem, this.results);
    form.querySelector("h2")!.id = "search-title";
  }

  /** Show the page for the URL's corpus and query; a query given in the URL is searched at once. */
  async open(corpus: string, query: string): Promise<void> {
    this.element.hidden = false;
    document.title = "Search your documents · Deep research";
    this.queryInput.value = query;
    this.showFormError(undefined);
    const corpora = await this.loadCorpora();
    if (!corpora) return;
    this.fillCorpora(corpora, corpus);
    if (query.trim()) await this.search(this.corpusSelect.value, query);
    else {
      replaceChildren(this.results);
      this.queryInput.focus();
    }
  }

  hide(): void {
    this.element.hidden = true;
    this.generation += 1;
  }

  private async loadCorpora(): Promise<CorpusSummary[] | undefined> {
    if (this.corpora) return this.corpora;
    replaceChildren(this.problem);
    try {
      this.corpora = await fetchCorpora(this.apiUrl);
    } catch (error) {
      replaceChildren(this.problem, problemBox({ title: "Could not list the corpora.", detail: errorText(error), retry: () => void this.open(this.corpusSelect.value, this.queryInput.value) }));
      return undefined;
    }
    return this.corpora;
  }

  private fillCorpora(corpora: CorpusSummary[], wanted: string): void {
    const options = corpora.map((c) => h("option", { value: c.name, text: `${c.title} (${c.documents.toLocaleString("en-US")} documents)` }));
    // A corpus named in the URL that the server does not have stays selected, so the search says so.
    if (wanted && !corpora.some((c) => c.name === wanted)) options.push(h("option", { value: wanted, text: `${wanted} (not on this server)` }));
    replaceChildren(this.corpusSelect, options);
    if (wanted) this.corpusSelect.value = wanted;
    const none = corpora.length === 0 && !wanted;
    this.corpusSelect.disabled = this.queryInput.disabled = this.submit.disabled = none;
    replaceChildren(
      this.problem,
      none ? h("p", { class: "banner warn", text: "This server has no corpus to search. Add one with ./run.sh corpus add NAME FOLDER (or declare it in DRA_CORPORA) and reload." }) : null,
    );
  }

  private showFormError(message: string | undefined): void {
    this.formError.hidden = !message;
    this.formError.textContent = message ?? "";
    if (message) this.queryInput.setAttribute("aria-invalid", "true");
    else this.queryInput.removeAttribute("aria-invalid");
  }

  private async search(corpus: string, query: string): Promise<void> {
    const problem = searchProblem(corpus, query);
    this.showFormError(problem);
    if (problem) {
      this.queryInput.focus();
      return;
    }
    history.replaceState(null, "", searchPageUrl(this.root, corpus, query));
    const generation = ++this.generation;
    this.submit.disabled = true;
    replaceChildren(this.problem);
    replaceChildren(this.results, h("p", { class: "muted", role: "status", text: "Searching\u2026" }));
    try {
      const answer = await searchCorpus(this.apiUrl, corpus, query.trim());
      if (generation === this.generation) this.showAnswer(answer);
    } catch (error) {
      if (generation !== this.generation) return;
      replaceChildren(this.results);
      replaceChildren(this.problem, problemBox({ title: "The search failed.", detail: errorText(error), retry: () => void this.search(corpus, query) }));
    } finally {
      if (generation === this.generation) this.submit.disabled = false;
    }
  }

  private showAnswer(answer: CorpusSearchAnswer): void {
    const title = this.corpora?.find((c) => c.name === answer.corpus)?.title ?? answer.corpus;
    replaceChildren(
      this.results,
      h("p", { class: "search-summary", role: "status", text: searchSummary(answer, title) }),
      answer.note ? h("p", { class: "banner warn search-note", text: answer.note }) : null,
      answer.hits.length ? h("ol", { class: "corpus-hits" }, answer.hits.map((hit) => hitItem(hit, title))) : null,
    );
  }
}

function hitItem(hit: CorpusHit, corpusTitle: string): HTMLElement {
  const place = hitPlace(hit);
  return h(
    "li",
    { class: "corpus-hit card", dataset: { passage: hit.id } },
    h("h3", { class: "hit-title", text: hitHeading(hit, corpusTitle) }),
    h(
      "p",
      { class: "hit-place" },
      h("span", { class: "sr-only", text: "Document: " }),
      h("code", { class: "hit-document", text: place.document }),
      place.anchor ? [" ", h("span", { class: "sr-only", text: "at " }), h("code", { class: "hit-anchor", text: place.anchor })] : null,
      h("span", { class: "hit-url muted", title: "What a report cites", text: ` · ${hit.url}` }),
    ),
    h("p", { class: "hit-snippet" }, snippetPieces(hit.snippet).map((piece) => (piece.marked ? h("mark", { text: piece.text }) : piece.text))),
    hit.text
      ? h("details", { class: "hit-passage folded" }, h("summary", { text: `The whole passage (${hit.text.length.toLocaleString("en-US")} characters)` }), h("pre", { class: "passage-text", text: hit.text }))
      : null,
  );
}
