"""Command-line client of the agent server: ``python -m deep_research_agent.cli {ask,doctor}``.

Contract:
- ``ask QUESTION`` streams a research run from a running agent server (``--url``, else ``DRA_URL``, else
  ``http://$DRA_HOST:$DRA_PORT``) and renders it for a person watching: a live status line with the
  elapsed time and the current activity; one printed line per search, new source, sub-agent start and
  end, findings, plan item and warning; the report as Markdown; the end status detail; and, always, the
  run time. Exit 0 when the run ends ``done``, 1 on ``error`` or a broken stream, 2 when no server answers
  or the arguments are unusable.
- Clarifying questions are asked interactively when stdin is a TTY and answered in ONE follow-up message
  on the same thread. With ``--no-clarify`` or without a TTY, the question tells the agent to proceed on
  stated assumptions, and a clarification that arrives anyway gets one "no answers" reply.
- ``--evidence FILE`` writes the question, report, sources and evidence from the thread state as JSON.
- ``doctor`` checks the local setup and prints a table. It starts nothing, never prints a secret, and
  exits 1 only when something required is missing.
- Interrupting ``ask`` (Ctrl-C) cancels the run on the server, so it stops spending tokens.

The rendering and decisions live in ``RunView`` (one stream part in, display updated), which is tested
without a server.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from rich.box import SIMPLE
from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.rule import Rule
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from .settings import DEFAULT_BASE_URL
from .names import Role, StopMode
from .protocol.events import PROTOCOL_VERSION, STOP_REQUESTS_NAMESPACE, format_elapsed
from .protocol.secrets import redact

# The graph id of langgraph.json. graph.py is not imported for it: that would load the whole agent stack.
GRAPH_ID = "deep_research_agent"
STREAM_MODES = ["messages", "updates", "custom"]
PROBE_TIMEOUT_S = 2.0

NO_CLARIFY_PREFIX = (
    "Do not ask clarifying questions. Proceed on reasonable assumptions, state them in the report, "
    "and research this:\n\n"
)
NO_ANSWERS_REPLY = "No answers are available; proceed on your stated assumptions."
CLARIFICATION_HEADER = "Answers to your clarifying questions:"
EMPTY_ANSWER = "(no answer; use your assumption)"

MODEL_KEY_ENVS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")
KEYLESS_SEARCH = "web search will use Tavily's keyless access, which is rate-limited"


# --- settings ---------------------------------------------------------------------------------------


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """The server URL run.sh starts: ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT`` (``PORT`` as fallback)."""
    environ = os.environ if environ is None else environ
    if environ.get("DRA_URL"):
        return environ["DRA_URL"].rstrip("/")
    host = environ.get("DRA_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):  # a wildcard bind is reached through loopback
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    port = environ.get("DRA_PORT") or environ.get("PORT") or "2024"
    return f"http://{host}:{port}"


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a .env file (comments, blank lines and ``export`` prefixes allowed)."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return values
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def project_root(start: Path | None = None) -> Path:
    """The nearest directory holding langgraph.json, else the working directory."""
    start = (start or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if (candidate / "langgraph.json").is_file():
            return candidate
    return start


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when ``url`` answers 200 within ``timeout`` seconds."""
    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


# --- clarification ----------------------------------------------------------------------------------


def format_clarification_reply(questions: Sequence[str], answers: Sequence[str]) -> str:
    """The one follow-up message that answers a clarification, numbered like the questions."""
    lines = [CLARIFICATION_HEADER]
    for number, (question, answer) in enumerate(zip(questions, answers, strict=True), start=1):
        lines.append(f"{number}. Q: {' '.join(question.split())} A: {' '.join(answer.split()) or EMPTY_ANSWER}")
    return "\n".join(lines)


def collect_answers(questions: Sequence[str], ask: Callable[[Text], str]) -> list[str]:
    return [ask(Text.assemble((f"{n}. ", "bold"), question, " › ")) for n, question in enumerate(questions, start=1)]


# --- the run view -----------------------------------------------------------------------------------


@dataclass
class _Task:
    label: str
    model: str | None = None


def _domain(url: str) -> str:
    return urlsplit(url).netloc or url


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


# What each Ctrl-C asks of the run, in order; one more abandons it.
_STOP_MODES = (StopMode.WRAP_UP, StopMode.NOW)
_STOPPING = {
    StopMode.WRAP_UP: "Wrapping up: the agents deliver what they found and the report is written. Ctrl-C again to stop now.",
    StopMode.NOW: "Stopping now: the report is assembled from the findings so far. Ctrl-C again to abandon the run.",
}

# Guards that warned and let the agent go on, and guards that stopped an agent or the run.
_GUARD_WARNINGS = ("budget_soft", "loop_detected", "runaway_output", "rate_limited")
_GUARD_STOPS = ("budget_halt", "loop_halt", "runaway_halt", "model_unavailable", "recursion_limit")


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
        self.runs += 1
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

    def stream_failed(self, message: str) -> None:
        self.failure = redact(message)
        self._print("✖", f"The stream failed: {self.failure}", "red")

    def finish(self) -> None:
        """The session's last lines; called from a ``finally``, so the run time is printed whatever happened."""
        if self.runs and self.end_state is None and self.failure is None:
            self._print("!", "The run ended without an end status.", "yellow")
        self.console.print(Text.assemble(("⏱ Run time ", "bold"), (self.run_time(), "bold")))

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
        elif state in ("warning", "keyless_search", *_GUARD_WARNINGS):
            self._print("!", detail or str(event.get("reason") or state), "yellow", self._who(event))
        elif state in _GUARD_STOPS:
            self._print("■", detail or str(event.get("reason") or state), "red", self._who(event))
        elif state == "stop_requested":
            mode = str(event.get("reason") or StopMode.NOW)
            self.activity = "wrapping up …" if mode == StopMode.WRAP_UP else "stopping …"
            if mode not in self._stops_announced:  # another client asked
                self._print("■", detail or "The run was asked to stop.", "yellow")
            self._stops_announced.add(mode)
        elif state == "model_call":
            self.activity = _heartbeat(self._who(event), event)
        elif state == "triage":
            self.activity = "answering directly …" if event.get("detail") == "simple" else "orchestrator planning …"
        elif state == "compacting":
            self._compacting_from[self._who(event)] = event.get("tokens_estimate")
            self.activity = f"{self._who(event)} compacting its context …"
        elif state == "compacted":
            self._print("⇣", _compaction_line(self._compacting_from.pop(self._who(event), None), event), "dim", self._who(event))
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
        self._queries[str(event.get("id"))] = query
        self.activity = f"{self._who(event)} searching “{query}” …"

    def _on_search_results(self, event: dict[str, Any]) -> None:
        self.searches += 1
        query = str(event.get("query") or self._queries.get(str(event.get("id")), ""))
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

    def _on_report(self, event: dict[str, Any]) -> None:
        self.report = str(event.get("markdown") or "")
        self.activity = "report delivered"
        self.console.print(Rule("Report"))
        if event.get("partial"):
            self._print("!", "Partial report, salvaged from an incomplete run.", "yellow")
        self.console.print(Markdown(self.report))
        self.console.print(Rule())

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


# --- ask --------------------------------------------------------------------------------------------


async def stream_run(
    client: Any, thread_id: str, content: str, configurable: Mapping[str, Any], view: RunView
) -> None:
    """Start one run on the thread and feed every stream part to the view, under a live status line."""
    view.start_run()
    parts = client.runs.stream(
        thread_id,
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": content}]},
        config={"configurable": dict(configurable)},
        stream_mode=STREAM_MODES,
        stream_subgraphs=True,
        on_disconnect="cancel",
    )
    with Live(view, console=view.console, refresh_per_second=8, transient=True), StopOnInterrupt(client, view) as stop:
        async for part in parts:
            if part.event == "metadata" and isinstance(part.data, dict):
                stop.run_id = part.data.get("run_id")
            view.handle(part.event, part.data)


class StopOnInterrupt:
    """Ctrl-C during a run: the first asks the run to wrap up (the agents deliver and the report is written),
    the second to stop now (the report is assembled from the findings so far), the third abandons it.

    Where the event loop cannot take signal handlers (Windows), Ctrl-C abandons the run at once, as before.
    """

    def __init__(self, client: Any, view: RunView) -> None:
        self.client = client
        self.view = view
        self.run_id: str | None = None
        self.requests_sent = 0
        self._task: asyncio.Task[Any] | None = None
        self._installed = False
        self._sending: set[asyncio.Task[None]] = set()

    def __enter__(self) -> StopOnInterrupt:
        self._task = asyncio.current_task()
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.interrupted)
            self._installed = True
        except (NotImplementedError, RuntimeError):
            pass
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._installed:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)

    def interrupted(self) -> None:
        if self.run_id is None or self.requests_sent >= len(_STOP_MODES):
            self.view.abandoning()
            if self._task is not None:
                self._task.cancel()
            return
        mode = _STOP_MODES[self.requests_sent]
        self.requests_sent += 1
        self.view.stopping(mode)
        sending = asyncio.ensure_future(self._send(self.run_id, mode))
        self._sending.add(sending)
        sending.add_done_callback(self._sending.discard)

    async def _send(self, run_id: str, mode: str) -> None:
        try:
            await self.client.store.put_item(list(STOP_REQUESTS_NAMESPACE), run_id, {"mode": mode, "by": "ask"})
        except Exception as exc:  # noqa: BLE001 - the run goes on; another Ctrl-C still abandons it
            self.view.stop_not_sent(type(exc).__name__)


async def write_evidence(client: Any, thread_id: str, question: str, path: Path) -> None:
    state = await client.threads.get_state(thread_id)
    values = state.get("values") if isinstance(state, dict) else None
    values = values if isinstance(values, dict) else {}
    payload = {
        "question": question,
        "report": values.get("final_report"),
        "sources": values.get("sources") or [],
        "evidence": values.get("evidence") or [],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def ask(
    client: Any,
    view: RunView,
    question: str,
    *,
    interactive: bool,
    configurable: Mapping[str, Any],
    evidence: Path | None = None,
    read_answer: Callable[[Text], str] | None = None,
) -> int:
    """One ask session: the run, at most one clarification follow-up, the evidence file, the run time."""
    try:
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        first = question if interactive else NO_CLARIFY_PREFIX + question
        await stream_run(client, thread_id, first, configurable, view)
        if view.clarification and view.failure is None:
            if interactive and read_answer is not None:
                reply = format_clarification_reply(view.clarification, collect_answers(view.clarification, read_answer))
            else:
                reply = NO_ANSWERS_REPLY
            await stream_run(client, thread_id, reply, configurable, view)
        if evidence is not None:
            await write_evidence(client, thread_id, question, evidence)
            view.console.print(Text(f"Evidence written to {evidence}"))
    except (asyncio.CancelledError, KeyboardInterrupt):
        view.stream_failed("interrupted")
        raise
    except Exception as exc:  # noqa: BLE001 - any transport or server failure ends the session with exit 1
        view.stream_failed(f"{type(exc).__name__}: {exc}")
    finally:
        view.finish()
    return view.exit_code


def _parse_configurable(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("--config must be a JSON object")
    return value


def cmd_ask(args: argparse.Namespace, console: Console) -> int:
    from langgraph_sdk import get_client

    try:
        configurable = _parse_configurable(args.config)
    except ValueError as exc:
        console.print(Text(f"Invalid --config: {exc}", "red"))
        return 2
    url = args.url.rstrip("/")
    if not probe(f"{url}/ok"):
        message = f"No agent server at {url} — start it with ./run.sh (or pass --url / set DRA_URL)."
        console.print(Text(message, "red"))
        return 2
    interactive = sys.stdin.isatty() and not args.no_clarify
    view = RunView(console)
    return asyncio.run(
        ask(
            get_client(url=url),
            view,
            args.question,
            interactive=interactive,
            configurable=configurable,
            evidence=Path(args.evidence) if args.evidence else None,
            read_answer=console.input,
        )
    )


# --- doctor -----------------------------------------------------------------------------------------

OK, FAIL, WARN = "✔", "✖", "!"


@dataclass(frozen=True)
class Check:
    mark: str
    name: str
    detail: str


def _first_set(names: Sequence[str], environ: Mapping[str, str], dotenv: Mapping[str, str]) -> str | None:
    """Where the first of ``names`` is set (never its value)."""
    for name in names:
        if environ.get(name):
            return name
        if dotenv.get(name):
            return f"{name}, in .env"
    return None


def _check_tools() -> list[Check]:
    python = ".".join(map(str, sys.version_info[:3]))
    checks = [Check(OK if sys.version_info >= (3, 11) else FAIL, "Python", f"{python} ({sys.executable})")]
    uv = shutil.which("uv")
    if uv is None:
        checks.append(Check(FAIL, "uv", "not found — ./run.sh installs it with pip"))
    else:
        result = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=10, check=False)
        checks.append(Check(OK, "uv", result.stdout.strip() or uv))
    return checks


def _check_project(root: Path) -> list[Check]:
    venv = root / ".venv"
    checks = [
        Check(OK, ".venv", str(venv)) if venv.is_dir() else Check(FAIL, ".venv", "missing — run ./run.sh --sync")
    ]
    try:
        importlib.import_module("deep_research_agent.graph")
        checks.append(Check(OK, "package", "deep_research_agent.graph imports"))
    except Exception as exc:  # noqa: BLE001 - any import failure is the finding
        checks.append(Check(FAIL, "package", redact(f"import failed: {type(exc).__name__}: {exc}")[:300]))
    dotenv = root / ".env"
    checks.append(
        Check(OK, ".env", str(dotenv))
        if dotenv.is_file()
        else Check(WARN, ".env", "not found — settings come from the environment only")
    )
    return checks


def _check_settings(environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    model_key = _first_set(MODEL_KEY_ENVS, environ, dotenv)
    tavily = _first_set(("TAVILY_API_KEY",), environ, dotenv)
    base_url = environ.get("OPENAI_BASE_URL") or dotenv.get("OPENAI_BASE_URL")
    return [
        Check(OK, "model API key", f"set ({model_key})")
        if model_key
        else Check(FAIL, "model API key", "not set — add OPENAI_API_KEY (or OPENROUTER_API_KEY) to .env"),
        Check(OK, "TAVILY_API_KEY", f"set ({tavily})")
        if tavily
        else Check(WARN, "TAVILY_API_KEY", f"not set — {KEYLESS_SEARCH}"),
        Check(OK, "OPENAI_BASE_URL", redact(base_url) if base_url else f"{DEFAULT_BASE_URL} (default)"),
    ]


def _check_services(url: str, environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    server = (
        Check(OK, "agent server", f"up at {url}")
        if probe(f"{url}/ok")
        else Check(WARN, "agent server", f"not running at {url} — start it with ./run.sh")
    )
    sandbox_url = (environ.get("LLM_SANDBOX_URL") or dotenv.get("LLM_SANDBOX_URL") or "").rstrip("/")
    if not sandbox_url:
        sandbox = Check(WARN, "sandbox", "not configured (code execution disabled)")
    elif probe(f"{sandbox_url}/healthz"):
        sandbox = Check(OK, "sandbox", f"reachable at {redact(sandbox_url)}")
    else:
        sandbox = Check(WARN, "sandbox", f"no answer from {redact(sandbox_url)}/healthz — code execution will fail")
    return [server, sandbox]


def run_doctor(url: str, root: Path, environ: Mapping[str, str]) -> list[Check]:
    dotenv = read_dotenv(root / ".env")
    return [
        *_check_tools(),
        *_check_project(root),
        *_check_settings(environ, dotenv),
        *_check_services(url, environ, dotenv),
    ]


def cmd_doctor(args: argparse.Namespace, console: Console) -> int:
    checks = run_doctor(args.url.rstrip("/"), project_root(), os.environ)
    styles = {OK: "green", FAIL: "red", WARN: "yellow"}
    table = Table(box=SIMPLE, show_header=False)
    table.add_column(width=1)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for check in checks:
        table.add_row(Text(check.mark, styles[check.mark]), Text(check.name), Text(check.detail))
    console.print(table)
    failed = [c.name for c in checks if c.mark == FAIL]
    if failed:
        console.print(Text(f"Missing: {', '.join(failed)}.", "red"))
        return 1
    console.print(Text("Everything required is in place.", "green"))
    return 0


# --- entry point ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deep_research_agent.cli", description="Client of the agent server.")
    commands = parser.add_subparsers(dest="command", required=True)
    url_help = "agent server URL (default: DRA_URL, else http://$DRA_HOST:$DRA_PORT)"

    ask_parser = commands.add_parser("ask", help="research a question and watch the run")
    ask_parser.add_argument("question")
    ask_parser.add_argument("--url", default=default_url(), help=url_help)
    ask_parser.add_argument("--no-clarify", action="store_true", help="never ask clarifying questions")
    ask_parser.add_argument("--evidence", metavar="FILE", help="write question, report, sources and evidence as JSON")
    ask_parser.add_argument("--config", metavar="JSON", help="extra configurable settings, as a JSON object")

    doctor_parser = commands.add_parser("doctor", help="check the local setup; starts nothing")
    doctor_parser.add_argument("--url", default=default_url(), help=url_help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    try:
        return cmd_ask(args, console) if args.command == "ask" else cmd_doctor(args, console)
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130


if __name__ == "__main__":
    sys.exit(main())
