"""``python -m deep_research_agent.evaluation`` (``./run.sh eval``): run a suite, compare scorecards, record or
replay a cassette.

Contract:
- ``--suite NAME|FILE [--url URL] [--tier T] [--config JSON] [--out DIR] [--concurrency N] [--only ID,...]
  [--fail-under METRIC=VALUE ...]`` runs the suite and writes ``scorecard.json`` and ``scorecard.md`` to
  ``--out`` (default ``eval-results/<suite>-<UTC time>``), whatever happened: a server that does not answer
  gives a scorecard of failed questions. Exit 0 when every question ran, no citation was fabricated and
  every ``--fail-under`` mean holds; 1 otherwise; 2 for unusable arguments, suite or server.
- ``compare A B [--fail-on-regression]``: the per-metric table and the verdict line (``compare.py``) of two
  scorecards (files, or directories holding ``scorecard.json``); exit 1 on a regression with the flag.
- ``cassette record FILE --model-upstream URL [--search-upstream URL] [--fetch-allow-host HOST[:PORT] ...]
  [--port N]`` and ``cassette replay FILE [--port N]`` serve the proxy of ``cassette.py`` until interrupted,
  and print the settings that point an agent server at it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..cli.env import default_url, server_answers
from .cassette import CassetteServer
from .compare import compare, render
from .judge import Judge, JudgeSettings
from .runner import progress_line, run_suite
from .scorecard import METRIC_BY_NAME, QuestionResult, Scorecard, render_markdown
from .suite import Suite, SuiteError, load_suite

RESULTS_DIR = "eval-results"


def _fail_under(raw: str) -> tuple[str, float]:
    name, _, value = raw.partition("=")
    if name not in METRIC_BY_NAME or not METRIC_BY_NAME[name].higher_is_better:
        raise argparse.ArgumentTypeError(f"{name!r} is not a metric where higher is better")
    try:
        return name, float(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{raw!r}: the value after = must be a number") from exc


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="./run.sh eval", description="Run a question suite and score it.")
    parser.add_argument("--suite", required=True, help="a shipped suite name (starter) or a JSON Lines file")
    parser.add_argument(
        "--url", default=default_url(), help="agent server URL (default: DRA_URL, else DRA_HOST:DRA_PORT)"
    )
    parser.add_argument("--tier", help="model tier for every run (configurable model_tier)")
    parser.add_argument("--config", metavar="JSON", help="extra configurable settings, as a JSON object")
    parser.add_argument("--out", metavar="DIR", help="where to write scorecard.json and scorecard.md")
    parser.add_argument("--concurrency", type=int, default=1, help="questions run at once (default 1)")
    parser.add_argument("--only", metavar="IDS", help="comma-separated question ids to run")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one question may take")
    parser.add_argument(
        "--fail-under", type=_fail_under, action="append", default=[], metavar="METRIC=VALUE",
        help="exit 1 when the metric's mean is under VALUE (e.g. citation_accuracy=0.9)",
    )  # fmt: skip
    return parser


def write(card: Scorecard, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scorecard.json").write_text(card.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / "scorecard.md").write_text(render_markdown(card), encoding="utf-8")


def unreachable(suite: Suite, url: str, config: dict[str, object], reason: str) -> Scorecard:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    failed = [
        QuestionResult(id=q.id, question=q.question, language=q.language, ok=False, error=reason)
        for q in suite.questions
    ]
    card = Scorecard(
        suite=suite.name, suite_path=suite.path, suite_sha256=suite.sha256, server=url, config=config,
        started_at=now, finished_at=now, wall_s=0.0, problems=[*suite.problems, reason], complete=False,
        questions=failed,
    )  # fmt: skip
    return card.summarise()


def cmd_run(argv: Sequence[str]) -> int:
    args = run_parser().parse_args(argv)
    try:
        configurable = json.loads(args.config) if args.config else {}
        if not isinstance(configurable, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        print(f"ERROR: --config must be a JSON object: {exc}", file=sys.stderr)
        return 2
    try:
        suite = load_suite(args.suite, only=[i for i in (args.only or "").split(",") if i] or None)
    except SuiteError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    for problem in suite.problems:
        print(f"WARNING: {problem}", file=sys.stderr)
    url = args.url.rstrip("/")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else Path(RESULTS_DIR) / f"{suite.name}-{stamp}"
    if not server_answers(url):
        reason = f"No agent server at {url}: start it with ./run.sh (or pass --url / set DRA_URL)."
        print(f"ERROR: {reason}", file=sys.stderr)
        write(unreachable(suite, url, configurable, reason), out)
        print(f"Scorecard (every question failed) written to {out}/scorecard.json")
        return 2
    settings = JudgeSettings.from_env()
    judge = Judge(settings) if settings else None
    print(f"Suite {suite.name}: {len(suite.questions)} question(s) on {url}, {args.concurrency} at a time"
          + (f", judged by {settings.model}" if settings else ", no judge configured"))  # fmt: skip

    from langgraph_sdk import get_client

    card = asyncio.run(
        run_suite(
            suite, get_client(url=url, timeout=args.timeout), server=url, configurable=configurable, tier=args.tier,
            judge=judge, concurrency=args.concurrency, timeout=args.timeout, progress=lambda line: print(line, flush=True),
        )
    )  # fmt: skip
    write(card, out)
    print(f"Scorecard written to {out}/scorecard.json and {out}/scorecard.md")
    for problem in card.problems:
        if problem not in suite.problems:
            print(f"PROBLEM: {problem}")
    failures = gate_failures(card, args.fail_under)
    for line in failures:
        print(f"FAIL: {line}")
    return 1 if failures else 0


def gate_failures(card: Scorecard, fail_under: Sequence[tuple[str, float]]) -> list[str]:
    """Why a suite run exits 1 (what fails CI): a mean under its ``--fail-under`` floor, any fabricated
    citation, a question that did not run to an end status."""
    failures = []
    for name, floor in fail_under:
        mean = card.summary[name].mean
        if mean is None or mean < floor:
            failures.append(f"{name} mean {mean} is under {floor}")
    if fabricated := sum(len(q.fabricated_citations) for q in card.questions):
        failures.append(f"{fabricated} fabricated citation(s): a report cites a URL its run never retrieved")
    if not card.complete:
        failures.append("not every question ran to an end status")
    return failures


def _scorecard(path: str) -> Scorecard:
    where = Path(path)
    return Scorecard.load(where / "scorecard.json" if where.is_dir() else where)


def cmd_compare(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="./run.sh eval compare", description="Compare two scorecards.")
    parser.add_argument("a", help="the baseline scorecard (file or directory)")
    parser.add_argument("b", help="the scorecard to hold against it")
    parser.add_argument("--fail-on-regression", action="store_true", help="exit 1 when the verdict is regression")
    args = parser.parse_args(argv)
    try:
        a, b = _scorecard(args.a), _scorecard(args.b)
    except (OSError, ValueError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    comparison = compare(a, b)
    print(render(comparison), end="")
    return 1 if args.fail_on_regression and comparison.verdict.startswith("regression") else 0


def cmd_cassette(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="./run.sh eval cassette", description="Record or replay model, search and page traffic."
    )
    parser.add_argument("mode", choices=("record", "replay"))
    parser.add_argument("file", help="the cassette (JSON)")
    parser.add_argument("--model-upstream", default="", help="record: the OpenAI-compatible endpoint to forward to")
    parser.add_argument("--search-upstream", default="", help="record: the Tavily endpoint (default Tavily's own)")
    parser.add_argument(
        "--fetch-allow-host", action="append", default=[], metavar="HOST[:PORT]",
        help="record: a private host pages may be read from (as DRA_FETCH_ALLOW_HOSTS); repeatable",
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        server = CassetteServer(
            Path(args.file), mode=args.mode, model_upstream=args.model_upstream,
            search_upstream=args.search_upstream, fetch_allow_hosts=tuple(args.fetch_allow_host),
            host=args.host, port=args.port,
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        print(f"Cassette {args.mode}: set OPENAI_BASE_URL={server.model_url} TAVILY_API_BASE_URL={server.search_url}"
              f" DRA_FETCH_CASSETTE_URL={server.page_url}")  # fmt: skip
        print("on the agent server (DRA_ALLOWED_BASE_URLS for a per-run base_url); Ctrl-C stops.", flush=True)
        while not stop.wait(0.5):
            pass
    if server.misses:
        print(f"{len(server.misses)} request(s) the cassette could not answer: {', '.join(server.misses[:5])}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"compare": cmd_compare, "cassette": cmd_cassette}
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    return cmd_run(argv)


__all__ = ["main", "progress_line"]

if __name__ == "__main__":
    sys.exit(main())
