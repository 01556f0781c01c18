"""The live view of a run: stream parts in, printed lines and one live status line out.

Contract:
- ``RunView.handle`` takes one SDK stream part (``custom``, ``messages/*`` and ``updates``, with the
  ``|tools:<uuid>`` suffix of sub-agent parts). It prints a line per search, new source, sub-agent start,
  end and failure, findings, plan item, usage summary, guard warning (``!``) and stop (``■``), compaction
  and revision; the clarifying questions; the report as Markdown, its Sources one list item each with its
  URL shown, then its claims' coverage as the server states it ("9 of 12 claims checked; 9 supported ...");
  and the end status with its detail. A run that delivered no report has its answer printed the same way
  once its stream ends (``start_run`` of the next run, or ``finish``): the orchestrator's last complete
  message (a direct answer, the text a salvaged run ended on), or else, for a run that ended in error,
  the error's detail.
  Everything else moves the live status line (elapsed time, current activity, sub-agents running,
  searches, sources).
- It holds the outcome: ``exit_code`` is 0 only when the last run ended ``done`` and the stream did not
  fail; ``finish`` prints the run time, the server's when every run reported one, else the wall clock.
- Text from the stream is wrapped in ``Text``, never parsed as markup, and stream failures are redacted.
- It is pure presentation: it sends nothing to the server and reads no settings, so it is tested without one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.markdown import Markdown
from rich.rule import Rule
from rich.spinner import Spinner
from rich.text import Text

from ..domain.clock import format_elapsed
from ..domain.names import HARNESS_MESSAGE_NAME, Role, StopMode
from ..domain.secrets import redact
from ..domain.stops import GUARD_STOP_STATES, GUARD_WARNING_STATES
from ..protocol.events import PROTOCOL_VERSION
from ..report.charts import charts_as_markdown
from ..report.rendering import listed_sources


@dataclass
class _Task:
    label: str
    model: str | None = None


def _domain(url: str) -> str:
    return urlsplit(url).netloc or url


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


# What this client prints when it asks the run to wrap up or to stop now (see ``ask.StopOnInterrupt``).
_STOPPING = {
    StopMode.WRAP_UP: "Wrapping up: the agents deliver what they found and the report is written. Ctrl-C again to stop now.",
    StopMode.NOW: "Stopping now: the report is assembled from the findings so far. Ctrl-C again to abandon the run.",
}


def _heartbeat(who: str, event: Mapping[str, Any]) -> str:
    """The live line for a model step: who thinks, at which step, after reading what."""
    line = f"{who} thinking"
    if isinstance(event.get("step"), int):
        line += f" (step {event['step']})"
    after = event.get("after")
    if after:
        line += f" · reading {', '.join(dict.fromkeys(map(str, after)))}"
    return line + " …"


def _compaction_line(before: Any, event: Mapping[str, Any]) -> str:
    line = f"context compacted: {_count(int(event.get('messages_summarized') or 0), 'message')} summarized"
    after = event.get("tokens_estimate")
    if isinstance(before, int) and isinstance(after, int):
        line += f", ~{before:,} → ~{after:,} tokens"
    return line


class RunView:
    """Turns stream parts into printed lines and a live status line, and holds the run's outcome.

    One view spans every run of an ``ask`` session (the question and a clarification follow-up), so a
    source is announced once per session and the run time covers all runs. Text from the stream is
    always wrapped in ``Text``, never parsed as markup, so a page title cannot restyle the terminal.
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self._clock = clock
        self._started = clock()
        self._spinner = Spinner("dots", text="")
        self.activity = "connecting …"
        self.tasks: dict[str, _Task] = {}
        self.active: set[str] = set()
        self.sources: set[str] = set()
        self.searches = 0
        self.clarification: list[str] = []
        self.report: str | None = None
        self.answer: str | None = None
        self._reported = False
        self.end_state: str | None = None
        self.end_detail: str | None = None
        self.failure: str | None = None
        self.runs = 0
        self._run_elapsed: list[float] = []
        self._queries: dict[str, str] = {}
        self._message_agents: dict[str, str] = {}
        self._todos: dict[str, str] = {}
        self._compacting_from: dict[str, Any] = {}
        self._stops_announced: set[str] = set()
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "run_start": self._on_run_start,
            "status": self._on_status,
            "search_query": self._on_search_query,
            "search_results": self._on_search_results,
            "source": self._on_source,
            "subagent_findings": self._on_findings,
            "clarification": self._on_clarification,
            "page_fetched": self._on_page_fetched,
            "report": self._on_report,
            "usage": self._on_usage,
        }

    # outcome

    @property
    def exit_code(self) -> int:
        return 0 if self.end_state == "done" and self.failure is None else 1

    def run_time(self) -> str:
        """The server's own run times when every run reported one, else this client's wall clock."""
        if self.runs and len(self._run_elapsed) == self.runs:
            return format_elapsed(sum(self._run_elapsed))
        return format_elapsed(self._clock() - self._started)

    def start_run(self) -> None:
        self._show_answer()
        self.runs += 1
        self.answer = None
        self._reported = False
        self.end_state = self.end_detail = self.failure = None
        self.clarification = []
        self._stops_announced = set()
        self.activity = "waiting for the server to pick up the run …"

    def stopping(self, mode: str) -> None:
        """This client asked the run to wrap up or to stop now."""
        self._print("■", _STOPPING[mode], "yellow")
        self.activity = "wrapping up …" if mode == StopMode.WRAP_UP else "stopping …"
        self._stops_announced.add(mode)

    def abandoning(self) -> None:
        self._print("✖", "Abandoning the run.", "red")

    def stop_not_sent(self, why: str) -> None:
        self._print("!", f"Could not ask the run to stop ({why}); Ctrl-C again to go further.", "yellow")

    def steering_inline(self) -> None:
        """This terminal's lines steer the run (``cli/steer_inline.py``)."""
        self._print(
            "·", "Type a message and press Enter to steer this run (\u201cdrop Y\u201d, \u201cfinish now\u201d).", "dim"
        )

    def steer_not_sent(self, why: str) -> None:
        self._print("!", f"Could not send the steering message ({why}).", "yellow")

    def stream_failed(self, message: str) -> None:
        self.failure = redact(message)
        self._print("✖", f"The stream failed: {self.failure}", "red")

    def finish(self) -> None:
        """The session's last lines; called from a ``finally``, so the run time is printed whatever happened."""
        self._show_answer()
        if self.runs and self.end_state is None and self.failure is None:
            self._print("!", "The run ended without an end status.", "yellow")
        self.console.print(Text.assemble(("⏱ Run time ", "bold"), (self.run_time(), "bold")))

    def _show_answer(self) -> None:
        """The last run's answer when it delivered no report (and asked no questions), printed like a report."""
        if not self.runs or self._reported or self.clarification:
            return
        self._reported = True
        if self.answer:
            self.console.print(Rule("Answer"))
            self.console.print(Markdown(self.answer))
            self.console.print(Rule())
        elif self.end_state == "error" and self.end_detail:
            self.console.print(Rule("Error", style="red"))
            self.console.print(Text(self.end_detail))
            self.console.print(Rule(style="red"))

    # live status line

    def status_text(self) -> Text:
        text = Text.assemble((format_elapsed(self._clock() - self._started), "bold cyan"), "  ", self.activity)
        facts = []
        if self.active:
            facts.append(f"{_count(len(self.active), 'sub-agent')} running")
        if self.searches:
            facts.append(_count(self.searches, "search"))
        if self.sources:
            facts.append(_count(len(self.sources), "source"))
        if facts:
            text.append("  · " + " · ".join(facts), "dim")
        return text

    def __rich__(self) -> Spinner:
        self._spinner.update(text=self.status_text())
        return self._spinner

    # stream parts

    def handle(self, event: str, data: Any) -> None:
        """Take one SDK stream part; sub-agent parts carry a ``|tools:<uuid>`` suffix on the event name."""
        kind, _, namespace = event.partition("|")
        if kind == "custom" and isinstance(data, dict):
            handler = self._handlers.get(str(data.get("type")))
            if handler is not None:
                handler(data)
        elif kind == "messages/metadata" and isinstance(data, dict):
            self._on_message_metadata(data)
        elif kind in ("messages/partial", "messages/complete") and isinstance(data, list) and data:
            self._on_message(data[-1], complete=kind == "messages/complete")
            if kind == "messages/complete" and not namespace:
                self._note_answer(data[-1])
        elif kind == "updates" and not namespace and isinstance(data, dict):
            self._on_updates(data)
        elif kind == "error":
            detail = data.get("message") or data.get("error") if isinstance(data, dict) else data
            self.stream_failed(f"the server reported: {detail}")

    def _who(self, event: Mapping[str, Any]) -> str:
        task = self.tasks.get(str(event.get("task_id")))
        if task is not None:
            return task.label
        return str(event.get("role") or Role.ORCHESTRATOR)

    def _print(self, icon: str, message: str, style: str = "", who: str | None = None) -> None:
        line = Text.assemble((f"{icon} ", style))
        if who and who != Role.ORCHESTRATOR:
            line.append(f"{who}: ", "dim")
        line.append(message, style)
        self.console.print(line)

    def _on_run_start(self, event: dict[str, Any]) -> None:
        version = event.get("protocol_version")
        if version != PROTOCOL_VERSION:
            self._print(
                "!",
                f"The server speaks event protocol v{version}; this client knows v{PROTOCOL_VERSION}, "
                "so some events may not be shown.",
                "yellow",
            )
        self.activity = "orchestrator planning …"
        if thread_id := event.get("thread_id"):
            self._print("·", f'Thread {thread_id}: steer this run with ./run.sh steer {thread_id} "MESSAGE"', "dim")

    def _on_status(self, event: dict[str, Any]) -> None:
        state = event.get("state")
        detail = str(event.get("detail") or "")
        if state == "subagent_start":
            self._subagent_started(event)
        elif state == "subagent_done":
            self._subagent_done(event)
        elif state == "subagent_failed":
            self.active.discard(str(event.get("task_id")))
            self._print("✖", f"{self._who(event)} failed: {detail}", "red")
        elif state in ("warning", "keyless_search") or state in GUARD_WARNING_STATES:
            self._print("!", detail or str(event.get("reason") or state), "yellow", self._who(event))
        elif state in GUARD_STOP_STATES:
            self._print("■", detail or str(event.get("reason") or state), "red", self._who(event))
        elif state == "stop_requested":
            mode = str(event.get("reason") or StopMode.NOW)
            self.activity = "wrapping up …" if mode == StopMode.WRAP_UP else "stopping …"
            if mode not in self._stops_announced:  # another client asked
                self._print("■", detail or "The run was asked to stop.", "yellow")
            self._stops_announced.add(mode)
        elif state == "steer_received":
            self._print("➜", f"Steering taken: \u201c{event.get('message') or ''}\u201d. {detail}".rstrip(), "cyan")
        elif state == "model_call":
            self.activity = _heartbeat(self._who(event), event)
        elif state == "triage":
            self.activity = "answering directly …" if event.get("detail") == "simple" else "orchestrator planning …"
        elif state == "compacting":
            self._compacting_from[self._who(event)] = event.get("tokens_estimate")
            self.activity = f"{self._who(event)} compacting its context …"
        elif state == "compacted":
            self._print(
                "⇣", _compaction_line(self._compacting_from.pop(self._who(event), None), event), "dim", self._who(event)
            )
        elif state == "revising":
            self.activity = "revising the report …"
            self._print("↻", detail or "Revising the report.", "", self._who(event))
        elif state in ("done", "error"):
            self._run_ended(event)
        else:  # a state newer than this client: show it rather than drop it
            self._print("·", f"{state}: {detail}".rstrip(": "), "dim", self._who(event))

    def _subagent_started(self, event: dict[str, Any]) -> None:
        task_id = str(event.get("task_id"))
        role = str(event.get("subagent") or event.get("role") or "sub-agent")
        task = _Task(label=f"{role} #{len(self.tasks) + 1}", model=event.get("model"))
        self.tasks[task_id] = task
        self.active.add(task_id)
        self.activity = f"{task.label} started"
        self._print("▶", f"{task.label} started" + (f" · {task.model}" if task.model else ""), "blue")

    def _subagent_done(self, event: dict[str, Any]) -> None:
        task_id = str(event.get("task_id"))
        self.active.discard(task_id)
        parts = [f"{self._who(event)} done"]
        model = event.get("model") or (self.tasks[task_id].model if task_id in self.tasks else None)
        if model:
            parts.append(str(model))
        for key, noun in (("model_calls", "model call"), ("total_tokens", "token"), ("tool_calls", "tool call")):
            if isinstance(event.get(key), int):
                parts.append(_count(event[key], noun))
        self._print("✔", " · ".join(parts), "green")

    def _run_ended(self, event: dict[str, Any]) -> None:
        self.end_state = str(event["state"])
        self.end_detail = str(event.get("detail") or "")
        if isinstance(event.get("elapsed_s"), (int, float)):
            self._run_elapsed.append(float(event["elapsed_s"]))
        self.active.clear()
        self.activity = "finished"
        reason = f" ({event['reason']})" if event.get("reason") else ""
        if self.end_state == "done":
            self._print("✔", f"Done{reason}: {self.end_detail}", "bold green")
        else:
            self._print("✖", f"Error{reason}: {self.end_detail}", "bold red")

    def _on_search_query(self, event: dict[str, Any]) -> None:
        query = str(event.get("query") or "")
        source = str(event.get("source") or "")
        # A corpus search names its corpus; a web search is the default and says nothing more.
        where = f" in {source.removeprefix('corpus:')}" if source.startswith("corpus:") else ""
        self._queries[str(event.get("id"))] = query + where
        self.activity = f"{self._who(event)} searching “{query}”{where} …"

    def _on_search_results(self, event: dict[str, Any]) -> None:
        self.searches += 1
        query = self._queries.get(str(event.get("id"))) or str(event.get("query") or "")
        if event.get("ok", True):
            count = event.get("count", len(event.get("results") or []))
            self._print("🔎", f"{query} → {_count(int(count), 'result')}", "", self._who(event))
        else:
            error = event.get("error") or "unknown error"
            self._print("🔎", f"{query} → failed: {error}", "yellow", self._who(event))

    def _on_source(self, event: dict[str, Any]) -> None:
        url = str(event.get("url") or "")
        if not url or url in self.sources:
            return
        self.sources.add(url)
        title = str(event.get("title") or url)
        self._print("  +", f"{title} — {event.get('domain') or _domain(url)}", "dim")

    def _on_findings(self, event: dict[str, Any]) -> None:
        findings = event.get("findings") or []
        gaps = event.get("gaps") or []
        text = f"{event.get('unit') or 'unit'} — {_count(len(findings), 'finding')}"
        if gaps:
            text += f", {_count(len(gaps), 'gap')}"
        self._print("📄", text, "", self._who(event))

    def _on_clarification(self, event: dict[str, Any]) -> None:
        self.clarification = [str(q) for q in event.get("questions") or []]
        self.activity = "waiting for answers"
        self._print("❓", "The agent asks:", "bold magenta")
        for number, question in enumerate(self.clarification, start=1):
            self.console.print(Text(f"   {number}. {question}"))

    def _on_page_fetched(self, event: dict[str, Any]) -> None:
        self.activity = f"{self._who(event)} reading {_domain(str(event.get('url') or ''))} …"

    def _note_answer(self, message: Any) -> None:
        """Keep the orchestrator's last complete reply that calls no tool: the answer, when no report comes."""
        if not isinstance(message, dict) or message.get("type") not in ("ai", "AIMessageChunk"):
            return
        if message.get("tool_calls") or message.get("name") == HARNESS_MESSAGE_NAME:
            return
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
        if isinstance(content, str) and content.strip():
            self.answer = content

    def _on_report(self, event: dict[str, Any]) -> None:
        self._reported = True
        self.report = str(event.get("markdown") or "")
        self.activity = "report delivered"
        self.console.print(Rule("Report"))
        if event.get("partial"):
            self._print("!", "Partial report, salvaged from an incomplete run.", "yellow")
        # Its Sources as a list, each URL shown: a terminal may not follow links, and the report's own
        # ``[n] Title — URL`` lines would run together into one paragraph. A chart is shown as its caption,
        # notes and data table (a terminal draws no image).
        shown = charts_as_markdown(self.report, lambda chart: None)
        self.console.print(Markdown(listed_sources(shown), hyperlinks=False))
        self.console.print(Rule())
        claims = event.get("claims")
        if isinstance(claims, dict) and claims.get("claims"):
            # The server's own sentence (domain/claims.summarise_claims): the same numbers every surface shows.
            flagged = int(claims.get("flagged") or 0)
            complete = int(claims.get("checked") or 0) == int(claims["claims"]) and not claims.get("judge_unreliable")
            coverage = claims.get("coverage") or f"{claims['claims']} claims, {claims.get('supported') or 0} supported"
            line = f"Claims against their sources: {coverage}"
            if flagged:
                line += " (see the evidence file for why)"
            ok = complete and not flagged
            self._print("✓" if ok else "!", line, "dim" if ok else "yellow")

    def _on_usage(self, event: dict[str, Any]) -> None:
        parts = [
            _count(int(event.get("model_calls") or 0), "model call"),
            _count(int(event.get("tool_calls") or 0), "tool call"),
            _count(int(event.get("total_tokens") or 0), "token"),
        ]
        if isinstance(event.get("cost_usd"), (int, float)):
            parts.append(f"${event['cost_usd']:.4f}")
        self._print("Σ", " · ".join(parts), "dim")

    def _on_message_metadata(self, data: dict[str, Any]) -> None:
        # The agent's name only comes with the first chunk of each message, so remember it by message id.
        for message_id, entry in data.items():
            metadata = entry.get("metadata") if isinstance(entry, dict) else None
            if isinstance(metadata, dict) and metadata.get("lc_agent_name"):
                self._message_agents[message_id] = str(metadata["lc_agent_name"])

    def _on_message(self, message: Any, *, complete: bool) -> None:
        """Name the current activity from model output: streamed chunks, or whole messages from models that
        do not stream. A finished tool result means that agent's model is now thinking about it."""
        if not isinstance(message, dict):
            return
        agent = self._message_agents.get(str(message.get("id")), "agent")
        kind = message.get("type")
        if kind == "tool" and complete:
            self.activity = f"{agent} thinking …"
        elif kind in ("ai", "AIMessageChunk"):
            names = [c["name"] for c in message.get("tool_calls") or [] if isinstance(c, dict) and c.get("name")]
            if names:
                self.activity = f"{agent} calling {', '.join(dict.fromkeys(names))} …"
            elif not complete:
                self.activity = f"{agent} writing …"

    def _on_updates(self, data: dict[str, Any]) -> None:
        for update in data.values():
            if isinstance(update, dict) and isinstance(update.get("todos"), list):
                self._on_plan(update["todos"])

    def _on_plan(self, todos: list[Any]) -> None:
        """Print each plan item once when it appears and once when it is completed."""
        for todo in todos:
            if not isinstance(todo, dict):
                continue
            content, status = str(todo.get("content") or ""), str(todo.get("status") or "pending")
            before = self._todos.get(content)
            self._todos[content] = status
            if before is None:
                self._print("☑" if status == "completed" else "☐", content, "dim")
            elif status == "completed" and before != "completed":
                self._print("☑", content, "green")
