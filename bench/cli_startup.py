"""How long each command of ``./run.sh`` takes to start, against the eager import every command paid before.

Each command runs in a fresh interpreter, as ``./run.sh`` starts it, ``--rounds`` times: ``corpus list`` and
``corpus search`` on a small corpus (testkit's handbook, indexed first); ``ask``, ``steer``, ``tasks`` and ``kb
list`` up to finding no server (their start, before they load the SDK); ``tasks`` and ``kb list`` against an
agent server with an empty store (``testkit.empty_server``: the whole command, the SDK's import included);
and the whole ``./run.sh corpus search`` (bash, ``.env``, uv, the CLI). The baseline, measured in the same run, is the eager import: every
command module of the CLI and the SDK imported at once, which is what ``import deep_research_agent.cli``
loaded for every command before.

Run: ``uv run python -m bench.cli_startup [--rounds 10] [--importtime corpus search handbook flux]``.
Prints the median and p95 of each and its ratio to the baseline's median; exits 1 when ``./run.sh corpus
search`` takes more than 3 s at p95, or a client command's start (all but the two runs with the SDK) has a
median over 1 s. ``--importtime ARGS`` also
prints the slowest imports (cumulative, ``python -X importtime``) of ``python -m deep_research_agent.cli ARGS``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from testkit.corpus import CORPUS_NAME, write_corpus
from testkit.empty_server import empty_server

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "deep_research_agent.cli"]
EAGER_IMPORT = [
    sys.executable,
    "-c",
    "import deep_research_agent.cli.ask, deep_research_agent.cli.steer, deep_research_agent.cli.tasks, "
    "deep_research_agent.cli.kb, deep_research_agent.cli.corpus, deep_research_agent.cli.doctor, langgraph_sdk",
]
CLIENT_BUDGET_S = 1.0
RUN_SH_SEARCH_P95_S = 3.0
QUERY = "flux buffer memory"


def timed(argv: Sequence[str], env: dict[str, str], rounds: int) -> list[float]:
    """Wall seconds of ``argv`` in a fresh process, ``rounds`` times; a failing command stops the bench."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
        if result.returncode not in (0, 2):
            raise SystemExit(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return samples


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def slowest_imports(argv: Sequence[str], env: dict[str, str], top: int = 15) -> list[tuple[float, str]]:
    """The ``top`` imports of ``python -X importtime -m deep_research_agent.cli argv`` by cumulative seconds."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *CLI[1:], *argv],
        cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    found = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.removeprefix("import time:").split("|")
            found.append((int(cumulative) / 1e6, name.rstrip()))
    return sorted(found, reverse=True)[:top]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--importtime", nargs=argparse.REMAINDER, help="a CLI command line to break down")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dra-cli-startup-") as scratch, empty_server() as server:
        env = {**os.environ, "DRA_DATA_DIR": str(Path(scratch) / "data"), "DRA_CORPORA": "", "COLUMNS": "120"}
        documents = write_corpus(Path(scratch) / "handbook")
        timed([*CLI, "corpus", "add", CORPUS_NAME, str(documents)], env, 1)
        nowhere = closed_url()
        # Each command, and whether the 1 s budget of a start holds for it: the server commands against a
        # server load the SDK as they connect (it imports langchain_core), which is shown but not budgeted.
        commands: dict[str, tuple[list[str], bool]] = {
            "corpus list": ([*CLI, "corpus", "list"], True),
            "corpus search": ([*CLI, "corpus", "search", CORPUS_NAME, QUERY], True),
            "ask (to: no server)": ([*CLI, "ask", "How dense?", "--url", nowhere], True),
            "steer (to: no server)": ([*CLI, "steer", "thread-1", "also costs", "--url", nowhere], True),
            "tasks (to: no server)": ([*CLI, "tasks", "--url", nowhere], True),
            "kb list (to: no server)": ([*CLI, "kb", "list", "--url", nowhere], True),
            "tasks (empty server, SDK)": ([*CLI, "tasks", "--url", server], False),
            "kb list (empty server, SDK)": ([*CLI, "kb", "list", "--url", server], False),
            "./run.sh corpus search": ([str(ROOT / "run.sh"), "corpus", "search", CORPUS_NAME, QUERY], False),
        }
        baseline = statistics.median(timed(EAGER_IMPORT, env, args.rounds))
        print(f"{'baseline: the eager import':<28} median {baseline:6.2f} s")
        failed = False
        for name, (command, client) in commands.items():
            samples = timed(command, env, args.rounds)
            median, worst = statistics.median(samples), p95(samples)
            over = (client and median > CLIENT_BUDGET_S) or (
                name.startswith("./run.sh") and worst > RUN_SH_SEARCH_P95_S
            )
            failed |= over
            print(
                f"{name:<28} median {median:6.2f} s  p95 {worst:6.2f} s  ratio {median / baseline:5.2f}"
                + ("  OVER BUDGET" if over else "")
            )
        if args.importtime:
            print(f"\nslowest imports of `cli {' '.join(args.importtime)}` (cumulative):")
            for seconds, module in slowest_imports(args.importtime, env):
                print(f"  {seconds:6.3f} s  {module}")
    print(
        f"\nbudgets: a client command's start under {CLIENT_BUDGET_S:.0f} s (median); "
        f"./run.sh corpus search under {RUN_SH_SEARCH_P95_S:.0f} s at p95"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
