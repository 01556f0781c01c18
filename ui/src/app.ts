// The page: the thread list, the question box, and the turns of the open thread, with the thread id in the
// URL (<root>/ui/threads/<id>). Reloading rejoins a running run or replays a finished one: every run is
// started resumable, and a join from event "-1" replays it from its start (joins ask for no stream modes:
// the run's own are the ones it keeps).

import type { Client } from "@langchain/langgraph-sdk/client";

import { GRAPH_ID, STOP_REQUESTS_NAMESPACE, STREAM_MODES, errorText, fetchEvidence, fetchSchedules, rootPath, steerNamespace } from "./api";
import { searchPageUrl } from "./corpus";
import { h, replaceChildren } from "./dom";
import { formatWhen } from "./format";
import type { EvidenceEntry, Message, StreamPart, ThreadValues } from "./model";
import { isHarnessMessage, isRecord, messageText } from "./model";
import { CorpusSearchPage } from "./views/corpus-search";
import { Turn, answersOf, pendingPlan, problemBox } from "./views/turn";
import type { PlanAction, PlanDecision, Problem, TurnActions } from "./views/turn";
import { watchingItems } from "./views/watching";

interface ThreadSummary {
  thread_id: string;
  updated_at?: string;
  created_at?: string;
  status?: string;
  metadata?: Record<string, unknown> | null;
  values?: unknown;
}

interface RunSummary {
  run_id: string;
  status: string;
  created_at: string;
  kwargs?: Record<string, unknown>;
}

const TIERS_FALLBACK = ["extra-low", "low", "mid", "high"];
// Suggestions for the report's language; any code the server knows may be typed (it refuses others, listing them).
const REPORT_LANGUAGES: [string, string][] = [
  ["auto", "The question's language"], ["en", "English"], ["fr", "French"], ["de", "German"], ["es", "Spanish"],
  ["it", "Italian"], ["pt", "Portuguese"], ["nl", "Dutch"], ["pl", "Polish"], ["ru", "Russian"], ["uk", "Ukrainian"],
  ["ar", "Arabic"], ["he", "Hebrew"], ["tr", "Turkish"], ["hi", "Hindi"], ["ja", "Japanese"], ["ko", "Korean"], ["zh", "Chinese"],
];
const REPORT_STYLES: [string, string][] = [
  ["standard", "Standard"], ["brief", "Brief (fewer units, 300-600 words)"], ["detailed", "Detailed (more units, 2,500-5,000 words)"],
];
/** How often the Watching list is read again, for the runs the schedules start meanwhile. */
const WATCHING_REFRESH_MS = 30_000;

export class App implements TurnActions {
  private threadId?: string;
  private turns: Turn[] = [];
  private abort = new AbortController();
  private evidence?: { threadId: string; records: Promise<EvidenceEntry[]> };
  private readonly el: Record<string, HTMLElement> = {};
  private readonly searchPage: CorpusSearchPage;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: Client,
    private readonly apiUrl: string,
  ) {
    this.searchPage = new CorpusSearchPage(apiUrl, rootPath());
  }

  start(): void {
    this.shell();
    window.addEventListener("popstate", () => void this.route());
    setInterval(() => this.turns.forEach((turn) => turn.live && turn.tick()), 1000);
    setInterval(() => void this.loadWatching(), WATCHING_REFRESH_MS);
    void this.loadOptions();
    void this.loadThreads();
    void this.route();
  }

  // --- URLs ------------------------------------------------------------------------------------------

  private basePath(): string {
    return `${rootPath()}/ui/`;
  }

  private threadUrl(threadId?: string): string {
    return threadId ? `${this.basePath()}threads/${encodeURIComponent(threadId)}` : this.basePath();
  }

  private threadFromUrl(): string | undefined {
    const base = this.basePath();
    const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : "";
    const match = /^threads\/([^/]+)\/?$/.exec(path);
    return match ? decodeURIComponent(match[1]!) : undefined;
  }

  private navigate(threadId?: string): void {
    history.pushState(null, "", this.threadUrl(threadId));
    void this.route();
  }

  private isSearchPage(): boolean {
    return location.pathname.replace(/\/$/, "") === `${this.basePath()}search`;
  }

  private async route(): Promise<void> {
    const searching = this.isSearchPage();
    for (const part of [this.el.pageProblem, this.el.turns, this.el.form]) part!.hidden = searching;
    if (searching) {
      this.reset(undefined);
      const params = new URLSearchParams(location.search);
      await this.searchPage.open(params.get("corpus") ?? "", params.get("q") ?? "");
      return;
    }
    this.searchPage.hide();
    const threadId = this.threadFromUrl();
    if (threadId) await this.openThread(threadId);
    else this.newResearch();
  }

  // --- the shell -------------------------------------------------------------------------------------

  private shell(): void {
    const e = this.el;
    e.threadList = h("ul", { class: "thread-list" });
    e.threadsProblem = h("div");
    e.watchList = h("ul", { class: "watch-list" });
    e.watchProblem = h("div");
    e.nav = h(
      "nav",
      { id: "threads", class: "threads", "aria-labelledby": "threads-title" },
      h("section", { class: "watching", "aria-labelledby": "watching-title" }, h("h2", { id: "watching-title", class: "section-label", text: "Watching" }), e.watchProblem, e.watchList),
      h("h2", { id: "threads-title", class: "section-label", text: "Past research" }),
      e.threadsProblem,
      e.threadList,
    );
    e.menu = h("button", { type: "button", class: "menu secondary", "aria-expanded": "false", "aria-controls": "threads", text: "Past research" });
    e.menu.addEventListener("click", () => {
      const open = !this.root.classList.contains("threads-open");
      this.root.classList.toggle("threads-open", open);
      e.menu!.setAttribute("aria-expanded", String(open));
      if (open) (e.threadList!.querySelector("a") as HTMLElement | null)?.focus();
    });
    const home = h("a", { href: this.threadUrl(), class: "brand", text: "Deep research" });
    home.addEventListener("click", (event) => {
      event.preventDefault();
      this.navigate();
    });
    const newButton = h("button", { type: "button", class: "new", text: "New research" });
    newButton.addEventListener("click", () => this.navigate());
    const searchLink = h("a", { href: searchPageUrl(rootPath()), class: "button-link secondary", text: "Search documents" });
    searchLink.addEventListener("click", (event) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      history.pushState(null, "", searchPageUrl(rootPath()));
      void this.route();
    });
    e.pageProblem = h("div", { class: "page-problem" });
    e.turns = h("div", { class: "turns" });
    e.form = this.askForm();
    e.main = h("main", { id: "main", tabindex: -1 }, e.pageProblem, e.turns, e.form, this.searchPage.element);
    replaceChildren(
      this.root,
      h("header", { class: "top" }, h("h1", null, home), h("div", { class: "top-actions" }, e.menu, searchLink, newButton)),
      h("div", { class: "layout" }, e.nav, e.main),
    );
  }

  private askForm(): HTMLElement {
    const question = h("textarea", { id: "question", name: "question", rows: 3, required: true, placeholder: "e.g. What changed in sodium-ion batteries this year? Cover Europe only." }) as HTMLTextAreaElement;
    const tier = h("select", { id: "tier", name: "model_tier" }, h("option", { value: "", text: "Server default" }), TIERS_FALLBACK.map((t) => h("option", { value: t, text: t })));
    const cost = h("input", { id: "max-cost", name: "max_cost_usd", type: "number", min: 0, step: "0.01", inputmode: "decimal", placeholder: "no cap" });
    const minutes = h("input", { id: "max-minutes", name: "max_minutes", type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "45" });
    const tools = h("input", { id: "max-tool-calls", name: "max_tool_calls", type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "200" });
    const submit = h("button", { type: "submit", class: "primary", text: "Research" });
    this.el.question = question;
    this.el.tier = tier;
    this.el.maxCost = cost;
    this.el.maxMinutes = minutes;
    this.el.maxToolCalls = tools;
    this.el.planReview = h("input", { id: "plan-review", name: "plan_review", type: "checkbox" });
    this.el.language = h("input", { id: "report-language", name: "report_language", type: "text", list: "report-languages", placeholder: "auto", autocomplete: "off", spellcheck: "false" });
    const languages = h("datalist", { id: "report-languages" }, REPORT_LANGUAGES.map(([code, name]) => h("option", { value: code, text: name })));
    this.el.style = h("select", { id: "report-style", name: "report_style" }, REPORT_STYLES.map(([value, text]) => h("option", { value, text })));
    this.el.outline = h("textarea", { id: "report-outline", name: "report_outline", rows: 3, placeholder: "Optional: one section heading per line, or a Markdown skeleton with ## headings" });
    this.el.submit = submit;
    this.el.busy = h("p", { class: "muted busy", hidden: true, text: "A run is in progress: what you send now steers it (\u201calso cover X\u201d, \u201cdrop Y\u201d, \u201cfinish now\u201d)." });
    this.el.askLabel = h("label", { for: "question", class: "ask-label", text: "What should I research?" });
    // Said here rather than by the browser's own bubble (the form is novalidate), for a blank question too.
    const askProblem = h("p", { id: "question-problem", class: "inline-error", role: "alert" });
    question.setAttribute("aria-describedby", "question-problem");
    const form = h(
      "form",
      { class: "ask card", "aria-label": "Ask a research question", novalidate: true },
      this.el.askLabel,
      question,
      askProblem,
      h("p", { class: "hint muted", text: "Ctrl+Enter sends. State your assumptions; the agent may ask before it starts." }),
      h(
        "fieldset",
        { class: "options" },
        h("legend", { text: "Model and budget" }),
        h("div", { class: "option" }, h("label", { for: "tier", text: "Model tier" }), tier),
        h("div", { class: "option" }, h("label", { for: "max-cost", text: "Max cost ($)" }), cost),
        h("div", { class: "option" }, h("label", { for: "max-minutes", text: "Time limit (min)" }), minutes),
        h("div", { class: "option" }, h("label", { for: "max-tool-calls", text: "Max tool calls" }), tools),
        h("div", { class: "option" }, h("label", { for: "plan-review", text: "Review the plan first" }), this.el.planReview),
      ),
      h(
        "fieldset",
        { class: "options" },
        h("legend", { text: "Report" }),
        h("div", { class: "option" }, h("label", { for: "report-language", text: "Language" }), this.el.language, languages),
        h("div", { class: "option" }, h("label", { for: "report-style", text: "Length" }), this.el.style),
        h("div", { class: "option outline" }, h("label", { for: "report-outline", text: "Sections" }), this.el.outline),
      ),
      h("div", { class: "actions" }, submit, this.el.busy),
    );
    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    question.addEventListener("input", () => replaceChildren(askProblem));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = question.value.trim();
      if (!text) {
        askProblem.textContent = "The question is empty: write what should be researched.";
        question.focus();
        return;
      }
      replaceChildren(askProblem);
      question.value = "";
      const live = this.liveTurn();
      if (live) void this.steer(live, text);
      else void this.startRun(text, this.configurable());
    });
    return form;
  }

  private configurable(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const value = (name: string) => (this.el[name] as HTMLInputElement).value.trim();
    if (value("tier")) out.model_tier = value("tier");
    if (value("maxCost")) out.max_cost_usd = Number(value("maxCost"));
    if (value("maxMinutes")) out.max_run_seconds = Number(value("maxMinutes")) * 60;
    if (value("maxToolCalls")) out.max_tool_calls = Number(value("maxToolCalls"));
    if ((this.el.planReview as HTMLInputElement).checked) out.plan_review = true;
    // Only what differs from the defaults is sent, so a run left alone is configured as before.
    const language = value("language").toLowerCase();
    if (language && language !== "auto") out.report_language = language;
    if (value("style") && value("style") !== "standard") out.report_style = value("style");
    if (value("outline")) out.report_outline = value("outline");
    return out;
  }

  /** Tier names and budget defaults from the assistant's config_schema, so the form shows the server's own. */
  private async loadOptions(): Promise<void> {
    try {
      const [assistant] = await this.client.assistants.search({ graphId: GRAPH_ID, limit: 1 });
      if (!assistant) return;
      const schemas = await this.client.assistants.getSchemas(assistant.assistant_id);
      const properties = (schemas.config_schema as { properties?: Record<string, { enum?: unknown[]; default?: unknown }> } | null)?.properties ?? {};
      const tiers = properties.model_tier?.enum?.filter((t): t is string => typeof t === "string");
      if (tiers?.length) {
        const select = this.el.tier as HTMLSelectElement;
        const fallback = typeof properties.model_tier?.default === "string" ? ` (${properties.model_tier.default})` : "";
        replaceChildren(select, h("option", { value: "", text: `Server default${fallback}` }), tiers.map((t) => h("option", { value: t, text: t })));
      }
      const placeholder = (name: string, key: string, scale = 1) => {
        const fallback = properties[key]?.default;
        if (typeof fallback === "number") (this.el[name] as HTMLInputElement).placeholder = fallback === 0 ? "no cap" : String(Math.round((fallback / scale) * 100) / 100);
      };
      placeholder("maxCost", "max_cost_usd");
      placeholder("maxMinutes", "max_run_seconds", 60);
      placeholder("maxToolCalls", "max_tool_calls");
    } catch {
      // The built-in tier names stay; a run still uses the server's defaults.
    }
  }

  // --- threads ---------------------------------------------------------------------------------------

  /** The schedules and their digests, newest first; each digest opens its run's thread here. */
  private async loadWatching(): Promise<void> {
    let schedules;
    try {
      schedules = await fetchSchedules(this.apiUrl);
    } catch (error) {
      replaceChildren(this.el.watchProblem!, problemBox({ title: "Could not list what is watched.", detail: errorText(error), retry: () => void this.loadWatching() }));
      return;
    }
    replaceChildren(this.el.watchProblem!);
    const open = (threadId: string, event: MouseEvent) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      this.root.classList.remove("threads-open");
      this.el.menu!.setAttribute("aria-expanded", "false");
      this.navigate(threadId);
    };
    replaceChildren(
      this.el.watchList!,
      schedules.length === 0 ? h("li", { class: "muted", text: "Nothing watched yet: ./run.sh schedule add runs a question on a schedule." }) : null,
      watchingItems(schedules, (threadId) => this.threadUrl(threadId), open),
    );
  }

  private async loadThreads(): Promise<void> {
    void this.loadWatching();
    let threads: ThreadSummary[];
    try {
      threads = (await this.client.threads.search({ limit: 40, sortBy: "updated_at", sortOrder: "desc" })) as ThreadSummary[];
    } catch (error) {
      replaceChildren(this.el.threadsProblem!, problemBox({ title: "Could not list past research.", detail: errorText(error), retry: () => void this.loadThreads() }));
      return;
    }
    replaceChildren(this.el.threadsProblem!);
    const ours = threads.filter((t) => !t.metadata?.graph_id || t.metadata.graph_id === GRAPH_ID);
    replaceChildren(
      this.el.threadList!,
      ours.length === 0 ? h("li", { class: "muted", text: "Nothing yet." }) : null,
      ours.map((thread) => {
        const link = h(
          "a",
          { href: this.threadUrl(thread.thread_id), "aria-current": thread.thread_id === this.threadId ? "page" : undefined },
          h("span", { class: "thread-title", text: threadTitle(thread) }),
          h("span", { class: "thread-meta muted", text: [threadStatus(thread.status), formatWhen(thread.updated_at)].filter(Boolean).join(" · ") }),
        );
        link.addEventListener("click", (event) => {
          if (event.ctrlKey || event.metaKey || event.shiftKey) return;
          event.preventDefault();
          this.root.classList.remove("threads-open");
          this.el.menu!.setAttribute("aria-expanded", "false");
          this.navigate(thread.thread_id);
        });
        return h("li", { dataset: { threadId: thread.thread_id } }, link);
      }),
    );
  }

  private markCurrentThread(): void {
    for (const link of Array.from(this.el.threadList!.querySelectorAll("a"))) {
      const id = (link.parentElement as HTMLElement).dataset.threadId;
      if (id === this.threadId) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  // --- the open thread -------------------------------------------------------------------------------

  private reset(threadId?: string): void {
    this.abort.abort();
    this.abort = new AbortController();
    this.threadId = threadId;
    this.turns = [];
    this.evidence = undefined;
    replaceChildren(this.el.turns!);
    replaceChildren(this.el.pageProblem!);
    this.markCurrentThread();
    this.updateComposer();
  }

  private newResearch(): void {
    this.reset(undefined);
    document.title = "Deep research";
    (this.el.question as HTMLTextAreaElement).focus();
  }

  private async openThread(threadId: string): Promise<void> {
    this.reset(threadId);
    const signal = this.abort.signal;
    let values: ThreadValues;
    let runs: RunSummary[];
    try {
      const [thread, listed] = await Promise.all([this.client.threads.get(threadId), this.client.runs.list(threadId, { limit: 100 })]);
      values = (isRecord(thread.values) ? thread.values : {}) as ThreadValues;
      runs = (listed as unknown as RunSummary[]).slice().sort((a, b) => a.created_at.localeCompare(b.created_at));
    } catch (error) {
      if (signal.aborted) return;
      this.pageProblem({ title: "Could not open this research.", detail: errorText(error), retry: () => void this.openThread(threadId) });
      return;
    }
    const userTurns = conversation(values.messages ?? []);
    document.title = `${userTurns[0]?.question.slice(0, 60) ?? "Research"} · Deep research`;
    if (runs.length === 0) {
      userTurns.forEach((past, i) => this.stateTurn(this.addTurn(past.question, {}), values, past.answer, i === userTurns.length - 1));
      return;
    }
    for (const [i, run] of runs.entries()) {
      if (signal.aborted) return;
      const isLast = i === runs.length - 1;
      const turn = this.addTurn(runInput(run) ?? userTurns[i]?.question ?? "(question not kept)", runConfigurable(run));
      turn.model.runId = run.run_id;
      const active = run.status === "pending" || run.status === "running";
      await this.follow(turn, this.client.runs.joinStream(threadId, run.run_id, { lastEventId: "-1", signal }), active);
      if (signal.aborted) return;
      if (!active && turn.model.eventCount === 0) this.stateTurn(turn, values, userTurns[i]?.answer, isLast);
    }
  }

  /** A run the server kept no events of, shown from the thread state (its last turn) or its final message. */
  private stateTurn(turn: Turn, values: ThreadValues, answer: string | undefined, isLast: boolean): void {
    turn.fromState = true;
    turn.model.answer = answer;
    if (isLast) {
      turn.model.applyValues(values);
      turn.model.lanesFromState(values.findings);
      const report = values.final_report;
      // The message a generic client renders is the report with its markers and Sources linked
      // (report/rendering.py): the same report when it opens with the same heading line.
      if (typeof report === "string" && report && (!answer || firstLine(answer) === firstLine(report))) {
        const partial = /^\s*(?:>\s*)?\*\*Incomplete\b/m.test(report.slice(0, 400));
        turn.model.report = { type: "report", markdown: report, partial, claims: values.claim_summary };
      }
    }
    turn.model.changed();
  }

  private addTurn(question: string, configurable: Record<string, unknown>): Turn {
    const previous = this.turns[this.turns.length - 1];
    if (previous?.model.clarification && !previous.answered) {
      previous.answered = true;
      previous.sentAnswers = answersOf(question);
      previous.schedule();
    }
    const turn = new Turn(question, configurable, this.threadId ?? "", this);
    this.turns.push(turn);
    this.el.turns!.append(turn.element);
    return turn;
  }

  private liveTurn(): Turn | undefined {
    return this.turns.find((turn) => turn.live);
  }

  private updateComposer(): void {
    const busy = this.liveTurn() !== undefined;
    this.el.submit!.textContent = busy ? "Steer" : "Research";
    this.el.busy!.hidden = !busy;
    this.el.askLabel!.textContent = busy
      ? "Steer the run in progress"
      : this.turns.length
        ? "Ask a follow-up on this thread"
        : "What should I research?";
  }

  private pageProblem(problem: Problem): void {
    replaceChildren(this.el.pageProblem!, problemBox(problem));
  }

  /** Start a run on the open thread (creating the thread first on a new page) and follow it live. */
  private async startRun(text: string, configurable: Record<string, unknown>): Promise<void> {
    const signal = this.abort.signal;
    if (!this.threadId) {
      try {
        const thread = await this.client.threads.create({ metadata: { title: text.slice(0, 120), graph_id: GRAPH_ID } });
        this.threadId = thread.thread_id;
        history.pushState(null, "", this.threadUrl(thread.thread_id));
        document.title = `${text.slice(0, 60)} · Deep research`;
        void this.loadThreads();
      } catch (error) {
        this.pageProblem({ title: "Could not start the research.", detail: errorText(error), retry: () => void this.startRun(text, configurable) });
        (this.el.question as HTMLTextAreaElement).value = text;
        return;
      }
    }
    replaceChildren(this.el.pageProblem!);
    const threadId = this.threadId;
    const turn = this.addTurn(text, configurable);
    turn.element.scrollIntoView({ block: "start", behavior: "smooth" });
    const stream = this.client.runs.stream(threadId, GRAPH_ID, {
      input: { messages: [{ role: "user", content: text }] },
      config: { configurable },
      streamMode: STREAM_MODES,
      streamSubgraphs: true,
      streamResumable: true,
      onDisconnect: "continue",
      signal,
    });
    await this.follow(turn, stream, true);
    void this.loadThreads();
  }

  /** Feed a stream to a turn; a broken stream is shown with the server's words and a way to go on. */
  private async follow(turn: Turn, stream: AsyncIterable<StreamPart>, live: boolean): Promise<void> {
    const signal = this.abort.signal;
    turn.live = live;
    turn.setProblem(undefined);
    this.updateComposer();
    try {
      for await (const part of stream) turn.model.apply(part);
    } catch (error) {
      if (signal.aborted) return;
      const started = turn.model.runId !== undefined;
      turn.setProblem({
        title: started ? "Lost the connection to the run." : "The server refused the run.",
        detail: errorText(error),
        retryLabel: started ? "Rejoin" : "Retry",
        retry: started ? () => void this.rejoin(turn) : () => this.retryStart(turn),
      });
    } finally {
      turn.live = false;
      this.updateComposer();
    }
    if (signal.aborted || !live) return;
    const plan = turn === this.turns[this.turns.length - 1] ? await this.refreshState(turn) : undefined;
    turn.showPlan(plan);
    if (plan) return;
    if (!turn.model.ended && !turn.problem && !turn.model.streamError && turn.model.runId) await this.explainMissingEnd(turn);
    this.evidence = undefined;
  }

  /** The thread state into the turn; the plan the run paused on for review, if it did. */
  private async refreshState(turn: Turn): Promise<PlanAction | undefined> {
    try {
      const state = await this.client.threads.getState(turn.threadId);
      if (isRecord(state.values) && turn.model.eventCount > 0) turn.model.applyValues(state.values as ThreadValues);
      return pendingPlan(state);
    } catch {
      // The events already showed the run; the state only adds the checked citations.
      return undefined;
    }
  }

  private async explainMissingEnd(turn: Turn): Promise<void> {
    let status = "unknown";
    try {
      status = (await this.client.runs.get(turn.threadId, turn.model.runId!)).status;
    } catch (error) {
      status = errorText(error);
    }
    if (status === "running" || status === "pending") {
      turn.setProblem({ title: "The stream ended while the run goes on.", detail: `The run is ${status}.`, retryLabel: "Rejoin", retry: () => void this.rejoin(turn) });
    } else {
      turn.setProblem({ title: "The run ended without an end status.", detail: `The server says the run is ${status}.`, retry: () => this.retry(turn) });
    }
  }

  private async rejoin(turn: Turn): Promise<void> {
    turn.model.clearFailure();
    const stream = this.client.runs.joinStream(turn.threadId, turn.model.runId!, {
      lastEventId: turn.model.lastEventId ?? "-1",
      signal: this.abort.signal,
    });
    await this.follow(turn, stream, true);
  }

  private retryStart(turn: Turn): void {
    turn.element.remove();
    this.turns = this.turns.filter((t) => t !== turn);
    void this.startRun(turn.question, turn.configurable);
  }

  // --- TurnActions -------------------------------------------------------------------------------------

  async stop(turn: Turn, mode: "wrap_up" | "now"): Promise<void> {
    const runId = turn.model.runId;
    if (!runId) throw new Error("the run has no id yet");
    try {
      await this.client.store.putItem(STOP_REQUESTS_NAMESPACE, runId, { mode, by: "ui" });
    } catch (error) {
      throw new Error(errorText(error));
    }
  }

  /** Send a steering message to the turn's run; the run acknowledges it in the feed (status steer_received). */
  private async steer(turn: Turn, message: string): Promise<void> {
    const runId = turn.model.runId;
    try {
      if (!runId) throw new Error("the run has no id yet");
      await this.client.store.putItem(steerNamespace(runId), `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`, { message, by: "ui" });
    } catch (error) {
      this.pageProblem({ title: "The steering message was not sent", detail: errorText(error) });
    }
  }

  retry(turn: Turn): void {
    void this.startRun(turn.question, turn.configurable);
  }

  answer(turn: Turn, text: string): void {
    void this.startRun(text, turn.configurable);
  }

  /** Resume the run paused on its plan with the one decision, followed live in the same turn. */
  review(turn: Turn, decision: PlanDecision): void {
    const stream = this.client.runs.stream(turn.threadId, GRAPH_ID, {
      command: { resume: { decisions: [decision] } },
      config: { configurable: turn.configurable },
      streamMode: STREAM_MODES,
      streamSubgraphs: true,
      streamResumable: true,
      onDisconnect: "continue",
      signal: this.abort.signal,
    });
    void this.follow(turn, stream, true);
  }

  loadEvidence(): Promise<EvidenceEntry[]> {
    const threadId = this.threadId;
    if (!threadId) return Promise.reject(new Error("no thread is open"));
    if (this.evidence?.threadId !== threadId) {
      const records = fetchEvidence(this.apiUrl, threadId);
      this.evidence = { threadId, records };
      records.catch(() => {
        if (this.evidence?.records === records) this.evidence = undefined;
      });
    }
    return this.evidence.records;
  }
}

// --- what the thread list and a reloaded thread show -----------------------------------------------------

function firstQuestion(values: unknown): string | undefined {
  if (!isRecord(values) || !Array.isArray(values.messages)) return undefined;
  const first = (values.messages as Message[]).find((m) => m.type === "human" && !isHarnessMessage(m));
  return first ? messageText(first) : undefined;
}

function threadTitle(thread: ThreadSummary): string {
  const title = thread.metadata?.title;
  const text = typeof title === "string" && title ? title : (firstQuestion(thread.values) ?? "Untitled research");
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

function threadStatus(status: string | undefined): string {
  switch (status) {
    case "busy":
      return "running";
    case "error":
      return "failed";
    case "interrupted":
      return "interrupted";
    default:
      return "";
  }
}

/** The user's turns of a thread and the last AI message of each (what every client shows as the answer). */
export function conversation(messages: Message[]): { question: string; answer?: string }[] {
  const turns: { question: string; answer?: string }[] = [];
  for (const message of messages) {
    if (isHarnessMessage(message)) continue;
    if (message.type === "human") turns.push({ question: messageText(message) });
    else if (message.type === "ai" && turns.length) {
      const text = messageText(message);
      if (text.trim()) turns[turns.length - 1]!.answer = text;
    }
  }
  return turns;
}

function runInput(run: RunSummary): string | undefined {
  const input = isRecord(run.kwargs) ? run.kwargs.input : undefined;
  const messages = isRecord(input) && Array.isArray(input.messages) ? (input.messages as Message[]) : [];
  const last = messages[messages.length - 1];
  if (!last) return undefined;
  return typeof last.content === "string" ? last.content : messageText(last);
}

function runConfigurable(run: RunSummary): Record<string, unknown> {
  const config = isRecord(run.kwargs) ? run.kwargs.config : undefined;
  const configurable = isRecord(config) ? config.configurable : undefined;
  if (!isRecord(configurable)) return {};
  // The server adds its own keys (run ids, graph ids) to a stored run's configurable; a retry sends only the user's.
  const keep = ["model_tier", "max_cost_usd", "max_run_seconds", "max_tool_calls", "max_total_tokens", "plan_review", "report_language", "report_style", "report_outline"];
  return Object.fromEntries(Object.entries(configurable).filter(([key]) => keep.includes(key)));
}

/** The first non-empty line of a text, trimmed. */
function firstLine(text: string): string {
  return (text.trim().split("\n", 1)[0] ?? "").trim();
}
