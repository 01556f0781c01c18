"""Where one Aegra instance's CPU goes: a py-spy profile of the instance under ``bench.scaleout``'s load.

The same stack as ``bench.scaleout`` (throwaway Postgres and Redis, the scripted model at 200 ms per call,
one instance with 3 workers x 10 jobs): a warm-up batch of 30 concurrent runs, then ``py-spy record``
samples the instance over ``ROUNDS`` more batches. Each sample on a CPU (py-spy leaves out idle threads,
so an event loop waiting on its sockets is not counted) is charged twice:

- to its **owner**, the package of the innermost frame that is not the standard library (a ``json.dumps``
  or an ``asyncio`` callback is charged to the package that called it);
- to its **asker**, the innermost frame of the product (``deep_research_agent``), Aegra (``aegra_api``),
  LangGraph (``langgraph``, the checkpointer and its serializer included), langchain or deepagents: who
  asked for the work, whatever library does it (psycopg under LangGraph's checkpointer is LangGraph's).

Printed: CPU seconds per run of the instance, its Postgres and its Redis; each owner's and asker's share of
the samples; the top functions of the askers. Run: ``uv run python -m bench.aegra_profile`` (needs what
``bench.scaleout`` needs and ``py-spy`` on PATH: ``uv tool install py-spy``; root, or ptrace rights over
the instance). Exits 1 when a run fails to deliver its report.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from langgraph_sdk import get_client

from bench.concurrency import MODEL_LATENCY_S, slow_happy_path
from bench.scaleout import CONCURRENT_RUNS, agent_settings, batch, cpu_sample
from deploy import services
from testkit.scripted_model import ScriptedModelServer
from testkit.web import WebStandIn

ROUNDS = 2
SAMPLE_RATE = 100
ASKERS = ("deep_research_agent", "aegra_api", "langgraph", "langchain", "deepagents")
TOP = 25


def package_of(frame: str) -> str | None:
    """The top-level package of one py-spy frame (``function (path:line)``), None for the standard library."""
    path = frame.rsplit("(", 1)[-1]
    for marker in ("/site-packages/", "/src/"):
        if marker in path:
            return path.split(marker, 1)[1].split("/", 1)[0].split(".", 1)[0]
    return None


def asker_of(package: str) -> str | None:
    return next((asker for asker in ASKERS if package == asker or package.startswith(asker + "_")), None)


def charge(raw: str) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    """Samples per owner, per asker and per asker function, and the sample count, from py-spy's raw
    output (one stack a line, outermost frame first, then the stack's sample count)."""
    owners: Counter[str] = Counter()
    askers: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = stack.split(";")
        packages = [package_of(frame) for frame in frames]
        owner = next((p for p in reversed(packages) if p is not None), "python (standard library)")
        owners[owner] += samples
        found = next(
            ((asker, frame) for frame, p in zip(reversed(frames), reversed(packages), strict=True)
             if p is not None and (asker := asker_of(p)) is not None),
            None,
        )  # fmt: skip
        if found is None:
            askers["other (uvicorn, starlette, asyncio)"] += samples
            continue
        asker, frame = found
        askers[asker] += samples
        name, _, where = frame.rpartition(" (")
        functions[f"{asker}: {name} ({where.rsplit('/', 1)[-1]}"] += samples
    return owners, askers, functions, total


def print_shares(title: str, counts: Counter[str], total: int, top: int | None = None) -> None:
    print(f"\n{title}")
    for name, samples in counts.most_common(top):
        print(f"  {samples / total * 100:5.1f} %  {name}")


async def profile(py_spy: str) -> int:
    with (
        ScriptedModelServer() as model,
        WebStandIn() as web,
        services.PostgresServer() as postgres,
        services.RedisServer() as redis,
    ):
        model.set_scenario(slow_happy_path())
        env = services.aegra_environment(
            postgres.url, redis.url, **agent_settings(model, web), WORKER_COUNT="3", N_JOBS_PER_WORKER="10",
            CRON_ENABLED="false",
        )  # fmt: skip
        services.migrate(env)
        workdir = Path(tempfile.mkdtemp(prefix="dra-bench-profile-"))
        instance = services.AegraInstance(env, log_path=workdir / "aegra.log").start(timeout=300)
        try:
            client = get_client(url=instance.url)
            await batch([client], Counter())  # warm-up
            out = workdir / "profile.txt"
            recorder = subprocess.Popen(
                [py_spy, "record", "--pid", str(instance.pid), "--format", "raw", "--full-filenames",
                 "--rate", str(SAMPLE_RATE), "--gil", "--nonblocking", "--output", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip
            await asyncio.sleep(1.0)  # py-spy attaches before the first batch starts
            processes = {
                "instance": lambda: [instance.pid],
                "postgres": lambda: [postgres.pid],
                "redis": lambda: [redis.pid],
            }
            before = cpu_sample(processes)
            delivered = 0
            for _ in range(ROUNDS):
                delivered += (await batch([client], Counter()))[2]
            spent = {name: seconds - before[name] for name, seconds in cpu_sample(processes).items()}
            recorder.send_signal(signal.SIGINT)
            _, errors = recorder.communicate(timeout=120)
            if not out.is_file():
                print(f"py-spy wrote no profile: {errors.decode(errors='replace')[-2000:]}", file=sys.stderr)
                return 2
        finally:
            instance.stop()
    runs = ROUNDS * CONCURRENT_RUNS
    owners, askers, functions, total = charge(out.read_text())
    print(
        f"{runs} runs in {ROUNDS} batches of {CONCURRENT_RUNS}, {MODEL_LATENCY_S * 1000:.0f} ms per model call; "
        f"{total} samples at {SAMPLE_RATE} Hz on a CPU ({total / SAMPLE_RATE / runs:.3f} s per run sampled)"
    )
    print("CPU seconds per run: " + ", ".join(f"{name} {seconds / runs:.3f}" for name, seconds in spent.items()))
    print_shares("Samples by owner (innermost non-stdlib package):", owners, total, top=15)
    print_shares(
        "Samples by asker (innermost frame of the product, Aegra, LangGraph, langchain, deepagents):", askers, total
    )
    print_shares(f"Top {TOP} asker functions:", functions, total, top=TOP)
    print(f"\nraw profile: {out}")
    print(f"reports delivered: {delivered}/{runs}")
    return 0 if delivered == runs else 1


def main() -> int:
    if gaps := services.missing():
        print(f"cannot run: this benchmark needs {', '.join(gaps)}", file=sys.stderr)
        return 2
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.expanduser("~/.local/bin"))
    if py_spy is None:
        print("cannot run: py-spy is not on PATH (uv tool install py-spy)", file=sys.stderr)
        return 2
    return asyncio.run(profile(py_spy))


if __name__ == "__main__":
    sys.exit(main())
