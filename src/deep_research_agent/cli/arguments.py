"""The arguments of the ``corpus``, ``kb`` and ``schedule`` commands, defined apart from the commands themselves.

``__main__`` builds the whole command line before it knows which command runs; taking these definitions
from the command modules would load what every command uses (the corpora's settings, the SQLite index,
the store client) for each of them.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..knowledge.namespace import DEFAULT_DATASET
from ..run.owner import ANONYMOUS_USER
from ..settings.corpora import HTML_MODES

DEFAULT_K = 10
MAX_K = 100
_BACKGROUND_HELP = "embed the passages in a detached process; keyword search works as soon as the command returns"


def add_corpus_parsers(commands: argparse._SubParsersAction) -> None:
    corpus = commands.add_parser("corpus", help="index and search local document collections")
    verbs = corpus.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="index a directory as a named corpus")
    add.add_argument("name")
    add.add_argument("directory")
    add.add_argument("--title", default="", help="how sources from it are cited, e.g. 'PostgreSQL 15 docs'")
    add.add_argument("--description", default="", help="what it holds, for the orchestrator's prompt")
    add.add_argument(
        "--html", choices=HTML_MODES, default="docs", help="docs (structure, anchors) or web (saved pages)"
    )
    add.add_argument(
        "--follow-links",
        action="store_true",
        help="also index what symbolic links lead to outside the directory (default: stay inside it)",
    )
    add.add_argument("--workers", type=int, default=None, help="indexing processes (default: one per core)")
    add.add_argument("--background", action="store_true", help=_BACKGROUND_HELP)
    reindex = verbs.add_parser("reindex", help="read changed files again, drop deleted ones")
    reindex.add_argument("names", nargs="*", help="corpora to update (default: all)")
    reindex.add_argument(
        "--declared", action="store_true", help="only the corpora DRA_CORPORA declares (what ./run.sh up updates)"
    )
    reindex.add_argument("--workers", type=int, default=None, help="indexing processes (default: one per core)")
    reindex.add_argument("--background", action="store_true", help=_BACKGROUND_HELP)
    embed = verbs.add_parser("embed", help="embed the passages that have no vector yet (search by meaning)")
    embed.add_argument("names", nargs="*", help="corpora to embed (default: all)")
    search = verbs.add_parser("search", help="search one corpus")
    search.add_argument("name")
    search.add_argument("query")
    search.add_argument("--k", type=int, default=DEFAULT_K, help=f"how many passages (1-{MAX_K})")
    search.add_argument("--json", action="store_true", help="one JSON object per hit and line")
    verbs.add_parser("list", help="show the corpora and their indexes")
    remove = verbs.add_parser("remove", help="delete a corpus's index")
    remove.add_argument("name")


def add_kb_parser(commands: Any, url_default: str, url_help: str) -> None:
    parser = commands.add_parser("kb", help="list, export or delete a knowledge-base dataset")
    actions = parser.add_subparsers(dest="kb_action", required=True)
    for action, help_text in (
        ("list", "list a dataset's entries (and every user and dataset that has some)"),
        ("export", "write a dataset's entries as JSON lines"),
        ("delete", "delete every entry of a dataset"),
    ):
        sub = actions.add_parser(action, help=help_text)
        sub.add_argument("--url", default=url_default, help=url_help)
        sub.add_argument("--user", default=None, help=f"the user (default: {ANONYMOUS_USER})")
        sub.add_argument("--dataset", default=None, help=f"the dataset (default: {DEFAULT_DATASET})")
        if action == "export":
            sub.add_argument("--out", metavar="FILE", help="write here instead of stdout")
        if action == "delete":
            sub.add_argument("--yes", action="store_true", help="really delete")


def add_schedule_parser(commands: Any, default_url: str, url_help: str) -> None:
    parser = commands.add_parser("schedule", help="research that keeps watch: add, list, pause, resume, remove")
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, help: str, *, named: bool = True) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = verbs.add_parser(name, help=help)
        if named:
            sub.add_argument("name", help="the schedule's name, which is also its task's")
        sub.add_argument("--url", default=default_url, help=url_help)
        sub.add_argument("--user", metavar="USER", help="whose schedules, on a server without auth")
        return sub

    add = verb("add", "run a question on a cron, each run continuing the task NAME")
    add.add_argument("question")
    add.add_argument("--cron", required=True, help="five fields: minute hour day-of-month month day-of-week")
    add.add_argument("--timezone", help="IANA timezone the cron is read in (default UTC)")
    add.add_argument("--webhook", metavar="URL", help="POST each finished run's digest here")
    add.add_argument("--config", metavar="JSON", help="extra configurable settings for every run, as a JSON object")
    add.add_argument("--paused", action="store_true", help="add it paused; resume it to start")
    listing = verb("list", "the user's schedules: next run, last outcome, cost, latest digests", named=False)
    listing.add_argument("--json", action="store_true", help="print the Watching list as JSON")
    verb("pause", "stop a schedule's runs until it is resumed")
    verb("resume", "start a paused schedule's runs again")
    verb("remove", "delete a schedule (its task and digests stay)")
