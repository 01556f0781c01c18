"""How long ``./run.sh corpus search NAME QUERY`` takes with search by meaning on, and where the time goes.

The corpus is a real one, already indexed and embedded (``bench.corpus_meaning --data-dir DIR`` leaves
Debian's SQLite and PostgreSQL docs in ``DIR``); each command runs in a fresh process, as a person runs it,
``--rounds`` times, in this order per round so that the machine's load falls on all alike:

- ``./run.sh corpus search`` with the bundled embedder (hybrid search: the model loads in the process);
- the same with ``DRA_EMBEDDINGS=off`` (keywords only): the baseline, measured in the same run;
- ``python -c pass`` and ``uv run --no-sync python -c pass``: the interpreter's and uv's share;
- one fresh interpreter that times each phase of the search in process: the CLI's imports, the model's load
  (as the search loads it, unoptimised, and as a server loads it, with the int8 weights folded), the
  question's embedding, reading the corpus's vectors, and the search itself.

Run: ``uv run python -m bench.corpus_search_start --data-dir DIR [--corpus sqlite] [--rounds 10]``.
Prints the median and p95 of each, and the ratio of the hybrid search to the keyword-only one; exits 1 when
``./run.sh corpus search`` with embeddings takes more than 3 s at p95.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P95_BUDGET_S = 3.0
QUERY = "How can I make the database file smaller after deleting lots of rows?"

# Each phase of one search, timed in a fresh interpreter; prints one JSON object of seconds.
PHASES = """
import json, sys, time
started = time.perf_counter()
import deep_research_agent.cli.corpus
from deep_research_agent.corpora.catalog import index_path
from deep_research_agent.corpora.fts5 import Fts5Index
from deep_research_agent.embeddings.bundled import BundledEmbedder
imported = time.perf_counter()
one_shot = BundledEmbedder(optimize=False)
one_shot.embed_query("warm-up")
loaded = time.perf_counter()
vector = one_shot.embed_query(sys.argv[3])
embedded = time.perf_counter()
BundledEmbedder(optimize=True).embed_query("warm-up")
folded = time.perf_counter()
index = Fts5Index(sys.argv[2], index_path(sys.argv[1], sys.argv[2]))
index.vectors.matrix()
read = time.perf_counter()
index.search(sys.argv[3], 10, meaning=vector)
searched = time.perf_counter()
print(json.dumps({
    "imports": imported - started,
    "model load (one-shot, as the CLI)": loaded - imported,
    "question embedding": embedded - loaded,
    "model load (folded, as a server)": folded - embedded,
    "reading the vectors": read - folded,
    "hybrid search": searched - read,
}))
"""


def run(argv: Sequence[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return elapsed, result.stdout + result.stderr


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="where bench.corpus_meaning left the indexes")
    parser.add_argument("--corpus", default="sqlite")
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    env = {**os.environ, "DRA_DATA_DIR": str(Path(args.data_dir).resolve()), "DRA_CORPORA": "", "COLUMNS": "120"}
    search = [str(ROOT / "run.sh"), "corpus", "search", args.corpus, args.query]
    _, first = run(search, env)  # syncs .venv and compiles bytecode when needed, as a first call would
    if "(hybrid" not in first:
        print(f"{args.corpus} is not searched by meaning here:\n{first}", file=sys.stderr)
        return 2
    python = str(ROOT / ".venv" / "bin" / "python")
    commands = {
        "./run.sh corpus search (hybrid)": (search, env),
        "./run.sh corpus search (keywords only)": (search, {**env, "DRA_EMBEDDINGS": "off"}),
        "python -c pass": ([python, "-c", "pass"], env),
        "uv run --no-sync python -c pass": (["uv", "run", "--no-sync", "python", "-c", "pass"], env),
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    phases: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, (command, command_env) in commands.items():
            samples[name].append(run(command, command_env)[0])
        _, printed = run([python, "-c", PHASES, args.data_dir, args.corpus, args.query], env)
        for phase, seconds in json.loads(printed.strip().splitlines()[-1]).items():
            phases.setdefault(phase, []).append(seconds)
    keywords = statistics.median(samples["./run.sh corpus search (keywords only)"])
    print(f"{args.corpus}: {args.rounds} rounds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    for name, values in samples.items():
        print(
            f"{name:<40} median {statistics.median(values):5.2f} s  p95 {p95(values):5.2f} s  "
            f"ratio to keywords only {statistics.median(values) / keywords:4.2f}"
        )
    print("\nin process (a fresh interpreter per round):")
    for phase, values in phases.items():
        print(f"  {phase:<36} median {statistics.median(values) * 1000:6.0f} ms  p95 {p95(values) * 1000:6.0f} ms")
    worst = p95(samples["./run.sh corpus search (hybrid)"])
    print(
        f"\nbudget: ./run.sh corpus search under {P95_BUDGET_S:.0f} s at p95: {'met' if worst <= P95_BUDGET_S else 'OVER'}"
    )
    return 0 if worst <= P95_BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
