"""The ``ask`` session: research one question on the agent server and watch the run in a ``RunView``.

Contract:
- The question is the argument, stdin up to its end when the argument is ``-``, or ``--question-file``'s text
  (either form takes a question longer than the OS allows an argument to be); an empty or blank one, or
  none, exits 2 before anything is sent (the server refuses one over its ``DRA_MAX_QUESTION_CHARS``).
- ``cmd_ask`` exits 2 when ``--config`` is not a JSON object or no server answers ``{url}/ok`` or ``{url}/health``; otherwise
  the exit status is the view's: 0 when the last run ended ``done``, 1 on ``error``, on a run that ended
  without an end status, or on a broken stream.
- Each run is streamed on one thread with the ``messages``, ``updates`` and ``custom`` parts of every
  sub-graph, and ``on_disconnect="cancel"``: when this client goes away, the server cancels the run.
- Clarifying questions are asked interactively when stdin is a TTY (and not ``--no-clarify``) and answered
  in ONE follow-up message on the same thread. Otherwise the run is sent with ``clarify: false`` (unless
  ``--config`` sets ``clarify``), so the agent proceeds on stated assumptions and the question goes as typed;
  a clarification that arrives anyway (``--config`` turned it on) gets one "no answers" reply.
- While a run streams and stdin is a terminal, each line typed is sent as a steering message
  (``steer_inline.py``), the channel ``./run.sh steer`` uses; the run's ack shows in the stream. Stdin that
  is no terminal (a pipe, CI) is never read for it.
- Ctrl-C during a run (``StopOnInterrupt``): the first asks the run to wrap up (the agents deliver what
  they found and the report is written), the second to stop now (the report is assembled from the
  findings so far), the third abandons it (the stream is dropped, the server cancels the run and no
  report is delivered). Before the run has an id, or where the event loop takes no signal handlers
  (Windows), Ctrl-C abandons the run at once.
- ``--evidence FILE`` writes, as JSON, the question, the report and sources from the thread state, the
  audit of every claim of the report (``claims``: each claim with its verdict, the figures or quotes that did
  not check out, and for each source it cites the source's URL, evidence id and the sentence of its text
  nearest to the claim), the per-source verdicts (``cited_sources``), and the full evidence records (texts
  included) of every run on the thread from the server's ``GET /evidence/{thread_id}`` route; a thread with
  no stored evidence gets an empty list.
- ``--out FILE`` writes the delivered report as a document (``export/``) in the format its extension names
  (``.md``, ``.html``, ``.pdf``, ``.docx``), from the thread state as ``GET /reports`` renders it; an unknown
  extension exits 2 before anything runs, and a run that delivered no report writes nothing and exits 1.
- ``--review-plan`` runs with ``plan_review`` on: when the run pauses on its plan (one human-in-the-loop action
  request), the plan is printed and the user answers approve, edit (each brief kept, replaced or dropped) or
  reject (with a message) on the terminal, and the run resumes with ``Command(resume={"decisions": [one]})``,
  as often as the agent proposes a plan.
- ``--task NAME`` (with ``--user USER``, default ``anonymous``) runs on that task's thread, found by its
  metadata or created with it, and passes ``task`` and ``user_id`` in the configurable.
- The run time is printed whatever happened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..domain.names import CLARIFICATION_HEADER, StopMode
from ..domain.questions import question_problem
from ..domain.reader import OutlineError, language_refusal, parse_outline, style_refusal
from ..protocol.events import STOP_REQUESTS_NAMESPACE
from ..run.owner import ANONYMOUS_USER
from .env import server_missing
from .steer_inline import SteerFromTerminal
from .tasks import task_thread
from .view import RunView

# The graph id of langgraph.json. graph.py is not imported for it: that would load the whole agent stack.
GRAPH_ID = "deep_research_agent"
# The evidence route of routes.py, not imported: it needs Starlette, which only the server has.
EVIDENCE_PATH = "/evidence"
STREAM_MODES = ["messages", "updates", "custom"]

NO_ANSWERS_REPLY = "No answers are available; proceed on your stated assumptions."
EMPTY_ANSWER = "(no answer; use your assumption)"

# What each Ctrl-C asks of the run, in order; one more abandons it.
_STOP_MODES = (StopMode.WRAP_UP, StopMode.NOW)


# --- clarification ----------------------------------------------------------------------------------


def format_clarification_reply(questions: Sequence[str], answers: Sequence[str]) -> str:
    """The one follow-up message that answers a clarification, numbered like the questions."""
    lines = [CLARIFICATION_HEADER]
    for number, (question, answer) in enumerate(zip(questions, answers, strict=True), start=1):
        lines.append(f"{number}. Q: {' '.join(question.split())} A: {' '.join(answer.split()) or EMPTY_ANSWER}")
    return "\n".join(lines)


def collect_answers(questions: Sequence[str], ask: Callable[[Text], str]) -> list[str]:
    return [ask(Text.assemble((f"{n}. ", "bold"), question, " › ")) for n, question in enumerate(questions, start=1)]


# --- plan review ------------------------------------------------------------------------------------


async def pending_plan(client: Any, thread_id: str) -> dict[str, Any] | None:
    """The plan the thread's run paused on (its one action request), or None when it is not waiting on one."""
    state = await client.threads.get_state(thread_id)
    for pending in (state.get("interrupts") if isinstance(state, dict) else None) or ():
        value = pending.get("value") if isinstance(pending, dict) else None
        actions = value.get("action_requests") if isinstance(value, dict) else None
        if isinstance(actions, list) and len(actions) == 1 and isinstance(actions[0], dict):
            return actions[0]
    return None


def review_plan(action: Mapping[str, Any], ask: Callable[[Text], str], console: Console) -> dict[str, Any]:
    """The user's one decision on the plan, asked on the terminal: approve, edit each brief, or reject."""
    console.print(Text(str(action.get("description") or ""), "bold"))
    choice = ask(Text("Approve, edit or reject the plan? [a/e/r] › ")).strip().lower()[:1]
    if choice == "r":
        return {"type": "reject", "message": ask(Text("What should change? › ")).strip()}
    if choice != "e":
        return {"type": "approve"}
    args = dict(action.get("args") or {})
    units = []
    for number, unit in enumerate(args.get("units") or [], start=1):
        brief = ask(
            Text.assemble((f"{number}. ", "bold"), str(unit.get("brief")), "\n   new brief (Enter keeps, - drops) › ")
        )
        if brief.strip() == "-":
            continue
        units.append({**unit, "brief": brief.strip() or unit.get("brief")})
    return {"type": "edit", "edited_action": {"name": action.get("name"), "args": {**args, "units": units}}}


# --- the session ------------------------------------------------------------------------------------


def run_parts(
    client: Any,
    thread_id: str,
    content: str | None,
    configurable: Mapping[str, Any],
    stream_mode: Sequence[str] = STREAM_MODES,
    *,
    resume: Any = None,
) -> AsyncIterator[Any]:
    """A new run's stream parts, as every client of this package starts one: the user's words as the one
    message (or, with ``resume``, the answer to the thread's interrupt), the ``stream_mode`` it reads (by
    default every mode the view reads), sub-agents included, and the run cancelled if the client goes away."""
    return client.runs.stream(
        thread_id,
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": content}]} if resume is None else None,
        command={"resume": resume} if resume is not None else None,
        config={"configurable": dict(configurable)},
        stream_mode=list(stream_mode),
        stream_subgraphs=True,
        on_disconnect="cancel",
    )


async def stream_run(
    client: Any,
    thread_id: str,
    content: str | None,
    configurable: Mapping[str, Any],
    view: RunView,
    *,
    resume: Any = None,
    steer_from: TextIO | None = None,
) -> None:
    """Start one run on the thread and feed every stream part to the view, under a live status line; each line
    typed on ``steer_from`` (a terminal, or None) meanwhile steers the run."""
    view.start_run()
    parts = run_parts(client, thread_id, content, configurable, resume=resume)
    with (
        Live(view, console=view.console, refresh_per_second=8, transient=True),
        StopOnInterrupt(client, view) as stop,
        SteerFromTerminal(client, thread_id, steer_from, view),
    ):
        async for part in parts:
            if part.event == "metadata" and isinstance(part.data, dict):
                stop.run_id = part.data.get("run_id")
            view.handle(part.event, part.data)


class StopOnInterrupt:
    """Ctrl-C during a run: the first asks the run to wrap up (the agents deliver and the report is written),
    the second to stop now (the report is assembled from the findings so far), the third abandons it.

    A stop request is an item in the server's store under the run id, sent without blocking the stream; one
    that cannot be sent is reported and the run goes on. Before the run id is known, and where the event
    loop cannot take signal handlers (Windows), Ctrl-C abandons the run at once.
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
    from langgraph_sdk.errors import NotFoundError  # loaded with the client already

    state = await client.threads.get_state(thread_id)
    values = state.get("values") if isinstance(state, dict) else None
    values = values if isinstance(values, dict) else {}
    try:
        evidence = await client.http.get(f"{EVIDENCE_PATH}/{thread_id}")
    except NotFoundError:
        evidence = []
    payload = {
        "question": question,
        "report": values.get("final_report"),
        "sources": values.get("sources") or [],
        "claims": values.get("citations") or [],
        "cited_sources": values.get("cited_sources") or [],
        "evidence": evidence,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def write_report(client: Any, thread_id: str, question: str, path: Path) -> bool:
    """The thread's delivered report written to ``path`` in the format of its extension; False when there is none."""
    # Imported here: the renderers load markdown-it, python-docx and WeasyPrint, which only --out needs.
    from ..export import ExportFormat, NoReport, render, report_document

    state = await client.threads.get_state(thread_id)
    values = state.get("values") if isinstance(state, dict) else None
    try:
        document = report_document(values or {}, created_at=state.get("created_at"), question=question)
    except NoReport:
        return False
    content = await asyncio.to_thread(render, document, ExportFormat.of_path(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return True


async def ask(
    client: Any,
    view: RunView,
    question: str,
    *,
    interactive: bool,
    configurable: Mapping[str, Any],
    evidence: Path | None = None,
    out: Path | None = None,
    read_answer: Callable[[Text], str] | None = None,
    review: bool = False,
    steer_from: TextIO | None = None,
) -> int:
    """One ask session: the run, at most one clarification follow-up, the evidence file, the report file, the
    run time. A ``task`` in ``configurable`` continues that task's thread (``cli/tasks.py``). Lines typed on
    ``steer_from`` (a terminal, or None) while a run streams steer it."""
    missing_report = False
    try:
        if task := configurable.get("task"):
            thread_id = await task_thread(client, str(task), str(configurable.get("user_id") or ANONYMOUS_USER))
        else:
            thread_id = (await client.threads.create())["thread_id"]
        if not interactive:
            # The engine's non-interactive mode; the question stays as typed (it is the thread's title).
            configurable = {"clarify": False, **configurable}
        await stream_run(client, thread_id, question, configurable, view, steer_from=steer_from)
        while review and read_answer is not None and (plan := await pending_plan(client, thread_id)) is not None:
            decision = review_plan(plan, read_answer, view.console)
            resume = {"decisions": [decision]}
            await stream_run(client, thread_id, None, configurable, view, resume=resume, steer_from=steer_from)
        if view.clarification and view.failure is None:
            if interactive and read_answer is not None:
                reply = format_clarification_reply(view.clarification, collect_answers(view.clarification, read_answer))
            else:
                reply = NO_ANSWERS_REPLY
            await stream_run(client, thread_id, reply, configurable, view, steer_from=steer_from)
        if evidence is not None:
            await write_evidence(client, thread_id, question, evidence)
            view.console.print(Text(f"Evidence written to {evidence}"))
        if out is not None:
            if await write_report(client, thread_id, question, out):
                view.console.print(Text(f"Report written to {out}"))
            else:
                view.console.print(Text(f"No report to write to {out}: the run delivered none.", "red"))
                missing_report = True
    except (asyncio.CancelledError, KeyboardInterrupt):
        view.stream_failed("interrupted")
        raise
    except Exception as exc:  # noqa: BLE001 - any transport or server failure ends the session with exit 1
        view.stream_failed(f"{type(exc).__name__}: {exc}")
    finally:
        view.finish()
    return max(view.exit_code, int(missing_report))


def _parse_configurable(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("--config must be a JSON object")
    return value


def reader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The configurable keys of ``--language``, ``--outline FILE`` and ``--style``; raises ``ValueError`` with the
    valid values (or what is wrong with the outline file) before any server is asked."""
    options: dict[str, Any] = {}
    if language := getattr(args, "language", None):
        code = language.strip().lower()
        if refusal := language_refusal(code):
            raise ValueError(refusal.replace("report_language", "--language", 1) + ".")
        options["report_language"] = code
    if style := getattr(args, "style", None):
        if refusal := style_refusal(style):
            raise ValueError(refusal.replace("report_style", "--style", 1) + ".")
        options["report_style"] = style
    if path := getattr(args, "outline", None):
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"Cannot read --outline {path}: {exc.strerror}.") from None
        except UnicodeDecodeError:
            raise ValueError(f"--outline {path} is not UTF-8 text.") from None
        try:
            options["report_outline"] = list(parse_outline(text))
        except OutlineError as exc:
            raise ValueError(f"--outline {path}: {exc}.") from None
    return options


def read_question(args: argparse.Namespace, stdin: TextIO) -> str:
    """The question from the argument, ``stdin`` (the argument ``-``) or ``--question-file``; raises
    ``ValueError`` saying what to give instead. Text read from stdin or a file loses its surrounding blanks."""
    path = getattr(args, "question_file", None)
    if path and args.question is not None:
        raise ValueError("Give the question as an argument or with --question-file, not both.")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ValueError(f"Cannot read --question-file {path}: {exc.strerror}.") from None
        except UnicodeDecodeError:
            raise ValueError(f"--question-file {path} is not UTF-8 text.") from None
    elif args.question == "-":
        if getattr(args, "review_plan", False):
            raise ValueError(
                "--review-plan reads its answers from stdin: give the question as an argument or with --question-file."
            )
        text = stdin.read().strip()
    elif args.question is None:
        raise ValueError(
            'No question: give it as an argument, as "-" to read it from stdin, or with --question-file FILE.'
        )
    else:
        text = args.question
    if problem := question_problem(text):
        raise ValueError(problem)
    return text


def cmd_ask(args: argparse.Namespace, console: Console) -> int:
    try:
        question = read_question(args, sys.stdin)
    except ValueError as exc:
        console.print(Text(str(exc), "red"))
        return 2
    try:
        configurable = _parse_configurable(args.config)
    except ValueError as exc:
        console.print(Text(f"Invalid --config: {exc}", "red"))
        return 2
    try:
        configurable = {**configurable, **reader_options(args)}
    except ValueError as exc:
        console.print(Text(str(exc), "red"))
        return 2
    out = Path(args.out) if getattr(args, "out", None) else None
    if out is not None:
        from ..export import ExportFormat

        try:
            ExportFormat.of_path(out)
        except ValueError as exc:
            console.print(Text(f"Invalid --out: {exc}", "red"))
            return 2
    url = args.url.rstrip("/")
    if missing := server_missing(url):
        console.print(Text(missing, "red"))
        return 2
    if getattr(args, "task", None):
        configurable = {
            **configurable,
            "task": args.task,
            "user_id": args.user or configurable.get("user_id") or ANONYMOUS_USER,
        }
    review = bool(getattr(args, "review_plan", False))
    if review:
        configurable = {**configurable, "plan_review": True}
    interactive = sys.stdin.isatty() and not args.no_clarify
    view = RunView(console)
    # Loaded once a server answers: the SDK imports langchain_core, more than the rest of the start costs.
    from langgraph_sdk import get_client

    return asyncio.run(
        ask(
            get_client(url=url),
            view,
            question,
            interactive=interactive,
            configurable=configurable,
            evidence=Path(args.evidence) if args.evidence else None,
            out=out,
            read_answer=console.input,
            review=review,
            # Only a terminal's lines steer: a pipe's (CI, a script) are never read for it.
            steer_from=sys.stdin if sys.stdin.isatty() else None,
        )
    )
