"""Entry point: ``python -m deep_research_agent.cli {ask,steer,tasks,schedule,doctor,corpus,kb}``, which is what ./run.sh runs.

Contract:
- ``ask QUESTION|- [--question-file FILE] [--url URL] [--no-clarify] [--review-plan] [--evidence FILE] [--out FILE]
  [--config JSON] [--task NAME] [--user USER]``, ``steer THREAD_ID MESSAGE [--url URL]`` (``steer.py``), ``tasks [--url URL] [--user USER]``,
  ``schedule add|list|pause|resume|remove ...`` (``schedule.py``),
  ``doctor [--url URL]``, ``corpus ...`` (``corpus.py``) and
  ``kb {list,export,delete} [--url URL] [--user U] [--dataset D]`` (``kb.py``);
  ``--url`` defaults to ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT``, the server run.sh starts.
- ``corpus add|reindex|search|list|remove …`` works on the local corpora without a server (see ``corpus``).
- The exit status is the command's (see ``ask`` and ``doctor``); 2 for unusable arguments; 130 when a
  Ctrl-C ends the session (one that abandons a run, or one outside a run).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

from rich.console import Console

from .arguments import add_corpus_parsers, add_kb_parser, add_schedule_parser
from .env import default_url


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deep_research_agent.cli", description="Client of the agent server.")
    commands = parser.add_subparsers(dest="command", required=True)
    url_help = "agent server URL (default: DRA_URL, else http://$DRA_HOST:$DRA_PORT)"

    ask_parser = commands.add_parser("ask", help="research a question and watch the run")
    ask_parser.add_argument("question", nargs="?", help='the question; "-" reads it from stdin')
    ask_parser.add_argument(
        "--question-file", metavar="FILE", help="read the question from a UTF-8 text file (a question of any length)"
    )
    ask_parser.add_argument("--url", default=default_url(), help=url_help)
    ask_parser.add_argument("--no-clarify", action="store_true", help="never ask clarifying questions")
    ask_parser.add_argument(
        "--review-plan", action="store_true", help="approve, edit or reject the plan before the research starts"
    )
    ask_parser.add_argument("--evidence", metavar="FILE", help="write question, report, sources and evidence as JSON")
    ask_parser.add_argument(
        "--out", metavar="FILE", help="write the report as a document: .md, .html, .pdf or .docx (by the extension)"
    )
    ask_parser.add_argument("--config", metavar="JSON", help="extra configurable settings, as a JSON object")
    ask_parser.add_argument("--task", metavar="NAME", help="continue (or start) the named task: same name, same thread")
    ask_parser.add_argument(
        "--user", metavar="USER", help="whose task it is when the server has no auth (default: anonymous)"
    )

    steer_parser = commands.add_parser("steer", help="steer the run in progress on a thread: also cover X, finish now")
    steer_parser.add_argument("thread_id")
    steer_parser.add_argument("message")
    steer_parser.add_argument("--url", default=default_url(), help=url_help)

    tasks_parser = commands.add_parser("tasks", help="list a user's tasks: name, last run, status, cost so far")
    tasks_parser.add_argument("--url", default=default_url(), help=url_help)
    tasks_parser.add_argument("--user", metavar="USER", help="whose tasks (default: anonymous)")
    add_schedule_parser(commands, default_url(), url_help)

    doctor_parser = commands.add_parser("doctor", help="check the local setup; starts nothing")
    doctor_parser.add_argument("--url", default=default_url(), help=url_help)
    add_corpus_parsers(commands)
    add_kb_parser(commands, default_url(), url_help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    try:
        # The command's module ``cli/<command>.py`` is loaded once it is chosen, so each command loads only
        # what it uses (the agent's framework for none of the client commands: tests/test_cli_startup.py).
        command = importlib.import_module(f".{args.command}", __package__)
        return int(getattr(command, f"cmd_{args.command}")(args, console))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130


if __name__ == "__main__":
    sys.exit(main())
