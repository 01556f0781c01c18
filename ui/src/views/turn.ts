// One turn of a thread: the user's message and the run that answers it, rendered live from its RunModel.


import { h, replaceChildren, syncKeyed } from "../dom";
import { PROTOCOL_VERSION, extraFields } from "../protocol";
import { endWords, formatCost, formatElapsed, formatNumber, formatTokens, outcomeWords, plural } from "../format";
import type { EvidenceEntry, Finding, Lane } from "../model";
import { RunModel } from "../model";
import { fieldList, markdownFragment } from "./common";
import { makeLane, renderFeed, renderThoughts, updateLane } from "./feed";
import { renderReport } from "./report-view";

export const NO_ANSWER = "(no answer; use your assumption)";
export const CLARIFICATION_HEADER = "Answers to your clarifying questions:";

/** The one follow-up message that answers a clarification, as `./run.sh ask` writes it (cli/ask.py). */
export function clarificationReply(questions: string[], answers: string[]): string {
  const squash = (text: string) => text.split(/\s+/).filter(Boolean).join(" ");
  return [CLARIFICATION_HEADER, ...questions.map((q, i) => `${i + 1}. Q: ${squash(q)} A: ${squash(answers[i] ?? "") || NO_ANSWER}`)].join("\n");
}

/** The answers of a paired reply (clarificationReply's format), in question order; undefined for any other message. */
export function answersOf(reply: string): string[] | undefined {
  const lines = reply.split("\n");
  if (lines[0]?.trim() !== CLARIFICATION_HEADER) return undefined;
  const answers = lines.slice(1).map((line) => /^\d+\. Q: .*? A: (.*)$/.exec(line)?.[1]);
  if (!answers.length || answers.some((a) => a === undefined)) return undefined;
  return answers.map((a) => (a === NO_ANSWER ? "" : a!));
}

/** One unit of a plan under review (plan_review): the `propose_plan` action request's `args.units`. */
export interface PlanUnit {
  brief: string;
  subagent_type?: string;
  expected_sources?: string[];
}

/** The one action request a run paused on for its plan review (langchain's human-in-the-loop format). */
export interface PlanAction {
  name: string;
  args: { units: PlanUnit[]; cost_estimate?: { cost_usd?: number; tokens?: number; ceiling_usd?: number | null } };
  description?: string;
}

/** A human-in-the-loop decision on the plan: the one decision a resume sends. */
export type PlanDecision =
  | { type: "approve" }
  | { type: "edit"; edited_action: { name: string; args: Record<string, unknown> } }
  | { type: "reject"; message: string };

/** The plan a paused thread waits on: its one action request, if it is a `propose_plan`. */
export function pendingPlan(state: object): PlanAction | undefined {
  const held = (state as { interrupts?: unknown }).interrupts;
  const interrupts: unknown[] = Array.isArray(held) ? held : [];
  for (const pending of interrupts) {
    const actions = (pending as { value?: { action_requests?: unknown } })?.value?.action_requests;
    if (Array.isArray(actions) && actions.length === 1 && (actions[0] as PlanAction)?.name === "propose_plan") return actions[0] as PlanAction;
  }
  return undefined;
}

export interface TurnActions {
  stop(turn: Turn, mode: "wrap_up" | "now"): Promise<void>;
  retry(turn: Turn): void;
  answer(turn: Turn, text: string): void;
  review(turn: Turn, decision: PlanDecision): void;
  loadEvidence(): Promise<EvidenceEntry[]>;
}

export interface Problem {
  title: string;
  detail: string;
  retry?: () => void;
  retryLabel?: string;
}

let turnCounter = 0;

export class Turn {
  readonly model = new RunModel();
  readonly element: HTMLElement;
  readonly id: string;
  /** Streaming now: the stop button and the clock run. */
  live = false;
  stopsSent = 0;
  stopProblem?: string;
  problem?: Problem;
  /** The server kept no events of this run: it is shown from the thread state. */
  fromState = false;
  answered = false;
  private frame = 0;
  private reportSignature = "";
  private answerSignature = "";
  private readonly parts: Record<string, HTMLElement> = {};

  constructor(
    readonly question: string,
    readonly configurable: Record<string, unknown>,
    readonly threadId: string,
    private readonly actions: TurnActions,
  ) {
    turnCounter += 1;
    this.id = `turn${turnCounter}`;
    this.element = this.skeleton();
    this.model.threadId = threadId;
    this.model.onChange = () => this.schedule();
    this.render();
  }

  schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  setProblem(problem: Problem | undefined): void {
    this.problem = problem;
    this.schedule();
  }

  private skeleton(): HTMLElement {
    const p = this.parts;
    p.status = h("div", { class: "status-line" });
    p.problem = h("div", { class: "problem-slot" });
    p.banner = h("p", { class: "banner warn", role: "note", hidden: true });
    p.plan = h("section", { class: "plan", hidden: true, "aria-label": "Plan" });
    p.orchestratorFeed = h("ul", { class: "feed" });
    p.orchestratorThinking = h("details", { class: "thinking" });
    p.lanes = h("div", { class: "lanes" });
    p.activity = h(
      "details",
      { class: "activity", open: true, hidden: true },
      h("summary", { class: "section-label" }),
      p.orchestratorFeed,
      p.orchestratorThinking,
      p.lanes,
    );
    p.clarification = h("div", { class: "clarification-slot" });
    p.review = h("div", { class: "clarification-slot" });
    p.answer = h("section", { class: "answer", hidden: true });
    p.report = h("div", { class: "report-slot" });
    p.usage = h("section", { class: "usage", hidden: true, "aria-label": "Usage" });
    p.end = h("p", { class: "end", hidden: true, role: "status" });
    return h(
      "article",
      { class: "turn", id: this.id, "aria-label": `Research: ${this.question.slice(0, 80)}` },
      h("div", { class: "question" }, h("span", { class: "who", text: "You" }), h("p", { class: "question-text", text: this.question })),
      p.status,
      p.problem,
      p.banner,
      p.plan,
      p.activity,
      p.clarification,
      p.review,
      p.answer,
      p.report,
      p.usage,
      p.end,
    );
  }

  render(): void {
    const m = this.model;
    this.renderStatus();
    this.renderProblem();
    const banner = this.parts.banner!;
    banner.hidden = m.versionMismatch === undefined && !this.fromState;
    banner.textContent =
      m.versionMismatch !== undefined
        ? `The server speaks event protocol version ${m.versionMismatch}; this page was built for version ${PROTOCOL_VERSION}, so some parts of the run may show only as raw fields.`
        : "The server kept no live events of this run; it is shown from the thread's saved state.";
    this.renderPlan();
    this.renderActivity();
    this.renderClarification();
    this.renderReview();
    this.renderAnswer();
    this.renderReportSection();
    this.renderUsage();
    this.renderEnd();
  }

  elapsedSeconds(): number | undefined {
    const m = this.model;
    if (typeof m.end?.elapsed_s === "number") return m.end.elapsed_s;
    if (m.usage) return m.usage.elapsed_s;
    if (!m.start) return undefined;
    const started = Date.parse(m.start.started_at);
    if (Number.isNaN(started)) return undefined;
    return Math.max(0, (Date.now() - started) / 1000);
  }

  tick(): void {
    const clock = this.parts.status?.querySelector(".clock");
    const seconds = this.elapsedSeconds();
    if (clock && seconds !== undefined) clock.textContent = formatElapsed(seconds);
  }

  private renderStatus(): void {
    const m = this.model;
    const status = this.parts.status!;
    const seconds = this.elapsedSeconds();
    const used = m.spend();
    const spend: string[] = [];
    if (used.modelCalls) spend.push(plural(used.modelCalls, "model call"));
    if (used.toolCalls) spend.push(plural(used.toolCalls, "tool call"));
    if (used.tokens) spend.push(`${formatTokens(used.tokens)} tokens`);
    if (used.costUsd !== undefined) spend.push(formatCost(used.costUsd));
    const beat = m.heartbeat && !m.ended ? heartbeatWords(m.heartbeat.who, m.heartbeat.event) : "";
    let phase = this.fromState ? "Finished" : m.phase();
    if (this.answered && m.end?.reason === "awaiting_clarification") phase = "Answered";
    if (!status.firstChild) {
      status.append(
        h("span", { class: "phase", role: "status", "aria-live": "polite" }),
        h("span", { class: "clock", "aria-label": "Elapsed time" }),
        h("span", { class: "spend" }),
        h("span", { class: "heartbeat" }),
        h("span", { class: "stop-slot" }),
      );
    }
    status.className = `status-line ${m.ended ? (m.end?.state === "error" ? "is-error" : "is-done") : this.live ? "is-live" : ""}`;
    setText(status.querySelector(".phase")!, phase);
    setText(status.querySelector(".clock")!, seconds === undefined ? "" : formatElapsed(seconds));
    setText(status.querySelector(".spend")!, spend.length ? `${spend.join(" · ")}${m.ended ? "" : " so far"}` : "");
    setText(status.querySelector(".heartbeat")!, beat);
    const slot = status.querySelector(".stop-slot") as HTMLElement;
    const canStop = this.live && !m.ended && !m.clarification && m.runId !== undefined;
    const wanted = canStop ? String(this.stopsSent) + (this.stopProblem ?? "") : "none";
    if (slot.dataset.state !== wanted) {
      slot.dataset.state = wanted;
      replaceChildren(slot, canStop ? this.stopButton() : null, this.stopProblem ? h("span", { class: "inline-error", role: "alert", text: this.stopProblem }) : null);
    }
  }

  private stopButton(): HTMLButtonElement {
    const mode = this.stopsSent === 0 ? "wrap_up" : "now";
    const button = h("button", {
      type: "button",
      class: mode === "wrap_up" ? "stop" : "stop danger",
      disabled: this.stopsSent >= 2,
      text: this.stopsSent === 0 ? "Stop" : this.stopsSent === 1 ? "Stop now" : "Stopping…",
      title:
        mode === "wrap_up"
          ? "Ask the run to wrap up: the agents deliver what they found and the report is written"
          : "Stop at once: the report is assembled from the findings so far",
    });
    button.addEventListener("click", () => {
      this.stopsSent += 1;
      this.stopProblem = undefined;
      this.schedule();
      this.actions.stop(this, mode).catch((error: Error) => {
        this.stopsSent -= 1;
        this.stopProblem = `Could not ask the run to stop: ${error.message}`;
        this.schedule();
      });
      // Keep the keyboard where it was: the button is rebuilt with its next label.
      requestAnimationFrame(() => (this.parts.status?.querySelector("button.stop") as HTMLButtonElement | null)?.focus());
    });
    return button;
  }

  private renderProblem(): void {
    const slot = this.parts.problem!;
    const m = this.model;
    const problem = this.problem ?? (m.streamError ? { title: "The stream failed", detail: m.streamError } : undefined);
    const key = problem ? `${problem.title}|${problem.detail}` : "";
    if (slot.dataset.key === key) return;
    slot.dataset.key = key;
    replaceChildren(slot, problem ? problemBox(problem) : null);
  }

  private renderPlan(): void {
    const todos = this.model.todos;
    const plan = this.parts.plan!;
    plan.hidden = todos.length === 0;
    const signature = JSON.stringify(todos);
    if (plan.dataset.signature === signature) return;
    plan.dataset.signature = signature;
    const done = todos.filter((t) => t.status === "completed").length;
    replaceChildren(
      plan,
      h("h3", { class: "section-label", text: `Plan · ${done} of ${todos.length} done` }),
      h(
        "ol",
        null,
        todos.map((todo) =>
          h("li", { class: `todo ${todo.status}` }, h("span", { class: "todo-mark", "aria-hidden": "true", text: todo.status === "completed" ? "✓" : todo.status === "in_progress" ? "◐" : "○" }), h("span", { class: "sr-only", text: `${todo.status.replace("_", " ")}: ` }), todo.content),
        ),
      ),
    );
  }

  private renderActivity(): void {
    const m = this.model;
    const activity = this.parts.activity as HTMLDetailsElement;
    const lanes = [...m.lanes.values()];
    const thinking = m.ended ? m.orchestrator.thoughts.filter((t) => t.text !== m.answer && t.text !== m.finalMessage) : m.orchestrator.thoughts;
    activity.hidden = lanes.length === 0 && m.orchestrator.feed.length === 0 && thinking.length === 0;
    const summary = activity.querySelector("summary")!;
    const facts = this.fromState
      ? [plural(lanes.length, "sub-agent"), plural(m.values.evidence?.length ?? 0, "text retrieved", "texts retrieved")]
      : [plural(lanes.length, "sub-agent"), plural(m.counters.searches, "search", "searches"), plural(m.counters.pages, "page")];
    setText(summary, `Research activity · ${facts.join(" · ")}`);
    renderFeed(this.parts.orchestratorFeed!, m.orchestrator.feed);
    // The orchestrator's last words are the turn's answer (or its error), shown as such, not as thinking.
    const thoughts = m.ended ? m.orchestrator.thoughts.filter((t) => t.text !== m.answer && t.text !== m.finalMessage) : m.orchestrator.thoughts;
    renderThoughts(this.parts.orchestratorThinking as HTMLDetailsElement, thoughts);
    syncKeyed(this.parts.lanes!, lanes, (lane: Lane) => lane.taskId, (lane: Lane) => lane.rev + lane.feed.length * 1000 + lane.thoughts.length * 7, makeLane, updateLane);
  }

  /** The answers this turn's questions got, when the next turn is the paired reply (a replayed thread). */
  sentAnswers?: string[];

  private renderClarification(): void {
    const slot = this.parts.clarification!;
    const questions = this.model.clarification;
    if (!questions) return;
    if (!slot.firstChild) slot.append(this.clarificationCard(questions));
    const form = slot.firstElementChild as HTMLFormElement;
    const closed = this.answered || this.fromState;
    form.querySelectorAll<HTMLInputElement>("input").forEach((input, i) => {
      input.disabled = closed;
      if (this.sentAnswers?.[i] !== undefined && !input.value) input.value = this.sentAnswers[i]!;
    });
    const submit = form.querySelector("button") as HTMLButtonElement;
    submit.disabled = closed;
    submit.textContent = this.answered ? "Answers sent" : "Send answers";
  }

  /** The plan the run waits on, shown for review until it is answered. */
  showPlan(plan: PlanAction | undefined): void {
    this.plan = plan;
    this.reviewed = false;
    replaceChildren(this.parts.review!);
    this.schedule();
  }

  private plan?: PlanAction;
  private reviewed = false;

  private renderReview(): void {
    const slot = this.parts.review!;
    if (!this.plan) return;
    if (!slot.firstChild) slot.append(this.planCard(this.plan));
    slot.querySelectorAll<HTMLButtonElement | HTMLTextAreaElement | HTMLInputElement>("button, textarea, input").forEach((control) => {
      control.disabled = this.reviewed;
    });
  }

  private planCard(plan: PlanAction): HTMLFormElement {
    const headingId = `${this.id}-plan-review`;
    const units = plan.args.units.map((unit, i) => {
      const id = `${this.id}-brief-${i + 1}`;
      const sources = unit.expected_sources?.length ? `Expected sources: ${unit.expected_sources.join(", ")}` : "";
      return h(
        "div",
        { class: "field" },
        h("label", { for: id, text: `Unit ${i + 1}` }),
        h("textarea", { id, name: `brief-${i + 1}`, rows: 2, value: unit.brief }),
        sources ? h("p", { class: "muted", text: sources }) : null,
      );
    });
    const estimate = plan.args.cost_estimate;
    const reason = h("input", { id: `${this.id}-reject-reason`, type: "text", autocomplete: "off", placeholder: "What should change?" }) as HTMLInputElement;
    const problem = h("p", { class: "inline-error", role: "alert" });
    // A decision, or undefined when there is none to send (the server would refuse it and keep the plan waiting).
    const button = (text: string, decide: () => PlanDecision | undefined, primary = false) => {
      const b = h("button", { type: "button", class: primary ? "primary" : "", text }) as HTMLButtonElement;
      b.addEventListener("click", () => {
        if (this.reviewed) return;
        const decision = decide();
        if (!decision) return;
        this.reviewed = true;
        this.schedule();
        this.actions.review(this, decision);
      });
      return b;
    };
    const edited = (): PlanDecision | undefined => {
      const briefs = units.map((field) => (field.querySelector("textarea") as HTMLTextAreaElement).value.trim());
      const kept = plan.args.units.map((unit, i) => ({ ...unit, brief: briefs[i] ?? "" })).filter((unit) => unit.brief);
      problem.textContent = kept.length ? "" : "Every brief is empty: to start nothing, reject the plan.";
      return kept.length ? { type: "edit", edited_action: { name: plan.name, args: { ...plan.args, units: kept } } } : undefined;
    };
    return h(
      "form",
      { class: "clarification plan-review card", "aria-labelledby": headingId },
      h("h3", { id: headingId, text: "Review the plan before the research starts" }),
      estimate?.cost_usd !== undefined
        ? h("p", { class: "muted estimate", text: `Estimated cost: ${formatCost(estimate.cost_usd)}${typeof estimate.ceiling_usd === "number" ? ` (at most ${formatCost(estimate.ceiling_usd)} within the run's budgets)` : ""}` })
        : null,
      units,
      h("div", { class: "field" }, h("label", { for: reason.id, text: "To reject, say what should change" }), reason),
      problem,
      h(
        "div",
        { class: "actions" },
        button("Approve", () => ({ type: "approve" }), true),
        button("Run edited plan", edited),
        button("Reject", () => ({ type: "reject", message: reason.value.trim() })),
      ),
    ) as HTMLFormElement;
  }

  private clarificationCard(questions: string[]): HTMLFormElement {
    const headingId = `${this.id}-clarify`;
    const fields = questions.map((question, i) => {
      const id = `${this.id}-answer-${i + 1}`;
      return h("div", { class: "field" }, h("label", { for: id, text: `${i + 1}. ${question}` }), h("input", { id, name: `answer-${i + 1}`, type: "text", autocomplete: "off" }));
    });
    const form = h(
      "form",
      { class: "clarification card", "aria-labelledby": headingId },
      h("h3", { id: headingId, text: "The agent asks before it starts" }),
      h("p", { class: "muted", text: "Answer what you can; a blank answer lets the agent use its own assumption." }),
      fields,
      h("div", { class: "actions" }, h("button", { type: "submit", text: "Send answers" })),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (this.answered || this.fromState) return;
      const answers = fields.map((field) => (field.querySelector("input") as HTMLInputElement).value);
      this.answered = true;
      this.schedule();
      this.actions.answer(this, clarificationReply(questions, answers));
    });
    if (this.live) requestAnimationFrame(() => (fields[0]?.querySelector("input") as HTMLInputElement | null)?.focus());
    return form;
  }

  private renderAnswer(): void {
    const m = this.model;
    const section = this.parts.answer!;
    const answered = m.end?.reason === "direct_answer" || (this.fromState && !m.report);
    const text = answered && !m.report ? (m.answer ?? m.finalMessage) : undefined;
    section.hidden = !text;
    if (!text || this.answerSignature === text) return;
    this.answerSignature = text;
    const body = h("div", { class: "markdown" });
    body.append(markdownFragment(text));
    replaceChildren(section, h("h2", { class: "section-label", text: "Answer" }), body);
  }

  private renderReportSection(): void {
    const m = this.model;
    const slot = this.parts.report!;
    const report = m.report;
    if (!report) return;
    const values = m.values;
    const signature = `${report.markdown.length}|${report.partial}|${JSON.stringify(values.citations ?? []).length}|${Object.keys(values.findings ?? {}).length}|${m.lanes.size}`;
    if (signature === this.reportSignature) return;
    this.reportSignature = signature;
    replaceChildren(
      slot,
      renderReport({
        idPrefix: this.id,
        report,
        values,
        findings: this.findings(),
        question: this.question,
        threadId: this.threadId,
        runId: m.runId,
        loadEvidence: () => this.actions.loadEvidence(),
      }),
    );
  }

  private findings(): Finding[] {
    const fromEvents = [...this.model.lanes.values()].flatMap((lane) => lane.findings?.findings ?? []);
    const fromState = Object.values(this.model.values.findings ?? {}).flatMap((handOver) => handOver.findings ?? []);
    return [...fromEvents, ...fromState];
  }

  private renderUsage(): void {
    const usage = this.model.usage;
    const section = this.parts.usage!;
    section.hidden = !usage;
    if (!usage || section.dataset.rev === String(usage.total_tokens)) return;
    section.dataset.rev = String(usage.total_tokens);
    const cited = usage.citations;
    const rows: [string, string, string?][] = [
      ["Time", usage.elapsed || formatElapsed(usage.elapsed_s)],
      ["Model calls", formatNumber(usage.model_calls)],
      ["Tool calls", formatNumber(usage.tool_calls)],
      ["Tokens", formatNumber(usage.total_tokens), `${formatNumber(usage.input_tokens)} in · ${formatNumber(usage.output_tokens)} out${usage.cached_tokens ? ` · ${formatNumber(usage.cached_tokens)} cached` : ""}`],
      ["Cost", formatCost(usage.cost_usd), usage.reported_cost_usd ? `${formatCost(usage.reported_cost_usd)} reported by the provider` : "estimated from the tier's prices"],
    ];
    if (cited) rows.push(["Citations", `${cited.valid ?? 0} verified`, `${cited.flagged ?? 0} flagged · ${cited.removed ?? 0} removed · ${cited.repaired ?? 0} repaired`]);
    const claims = usage.claims;
    if (claims?.claims) {
      // The server's own sentence (domain/claims.py summarise_claims): coverage and accuracy, never counted here.
      const notes = claims.judged ? [`${formatNumber(claims.judged)} judged by the model`] : [];
      rows.push(["Claims", claims.coverage || `${formatNumber(claims.claims)} claims`, notes.join(", ")]);
    }
    if (usage.compactions) rows.push(["Compactions", formatNumber(usage.compactions), `${formatNumber(usage.messages_summarized ?? 0)} messages summarized`]);
    const roles = Object.entries(usage.per_role ?? {});
    replaceChildren(
      section,
      h("h3", { class: "section-label", text: "Usage" }),
      h("dl", { class: "usage-grid" }, rows.map(([name, value, sub]) => h("div", null, h("dt", { text: name }), h("dd", { text: value }), sub ? h("dd", { class: "sub", text: sub }) : null))),
      roles.length
        ? h(
            "details",
            { class: "folded" },
            h("summary", { text: "Per role" }),
            h(
              "div",
              { class: "table-wrap" },
              h(
                "table",
                null,
                h("thead", null, h("tr", null, ["Role", "Model calls", "Tool calls", "Input", "Output", "Cost"].map((title) => h("th", { scope: "col", text: title })))),
                h(
                  "tbody",
                  null,
                  roles.map(([role, r]) =>
                    h("tr", null, h("th", { scope: "row", text: role }), h("td", { text: formatNumber(r.model_calls ?? 0) }), h("td", { text: formatNumber(r.tool_calls ?? 0) }), h("td", { text: formatNumber(r.input_tokens ?? 0) }), h("td", { text: formatNumber(r.output_tokens ?? 0) }), h("td", { text: formatCost(r.cost_usd ?? 0) })),
                  ),
                ),
              ),
            ),
          )
        : null,
      fieldList(extraFields(usage, ["tool_calls", "model_calls", "input_tokens", "output_tokens", "cached_tokens", "total_tokens", "budget_tokens", "cost_usd", "reported_cost_usd", "per_role", "compactions", "messages_summarized", "citations", "claims", "elapsed_s", "elapsed", "limits"])),
    );
  }

  private renderEnd(): void {
    const end = this.model.end;
    const line = this.parts.end!;
    line.hidden = !end;
    if (!end) return;
    const key = `${end.state}|${end.reason}|${end.outcome}|${this.live}|${this.answered}`;
    if (line.dataset.key === key) return;
    line.dataset.key = key;
    line.className = `end ${end.state === "error" ? "error" : "done"}`;
    const canRetry = end.state === "error" && !this.fromState;
    const answered = this.answered && end.reason === "awaiting_clarification";
    replaceChildren(
      line,
      h("strong", { text: answered ? "Answers sent." : `${endWords(end)}.` }),
      answered ? " The research goes on below." : end.detail ? ` ${end.detail}` : "",
      outcomeWords(end.outcome) ? h("span", { class: `outcome outcome-${end.outcome}`, text: outcomeWords(end.outcome) }) : null,
      canRetry ? [" ", h("button", { type: "button", class: "secondary retry", text: "Retry", on: { click: () => this.actions.retry(this) } })] : null,
    );
  }
}

function setText(element: Element, text: string): void {
  if (element.textContent !== text) element.textContent = text;
}

function heartbeatWords(who: string, event: { step?: number | null; unit?: string | null; after?: string[] | null }): string {
  let words = `${who} is thinking`;
  if (event.unit) words += ` about “${event.unit.length > 90 ? `${event.unit.slice(0, 89)}…` : event.unit}”`;
  const facts: string[] = [];
  if (typeof event.step === "number") facts.push(`step ${event.step}`);
  if (event.after?.length) facts.push(`after reading ${[...new Set(event.after)].join(", ")}`);
  return facts.length ? `${words} (${facts.join(", ")})` : words;
}

export function problemBox(problem: Problem): HTMLElement {
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("p", null, h("strong", { text: problem.title }), problem.detail ? h("span", { class: "problem-detail", text: ` ${problem.detail}` }) : null),
    problem.retry ? h("button", { type: "button", class: "secondary retry", text: problem.retryLabel ?? "Retry", on: { click: problem.retry } }) : null,
  );
}

