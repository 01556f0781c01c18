"""Scale-out: thirty concurrent runs on one ``langgraph dev``, on one Aegra instance and on two, in one run.

Every model call takes 200 ms (the scripted model's ``delay_s``; five calls per run), so a run mostly
waits on the model, as real runs do, and what differs between the setups is how much of the rest (graph
factory, guards, checkpoints, streaming) one process can do at once. Each setup gets a warm-up batch
(imports, graph compile, connection pools: in every process) and then ``ROUNDS`` measured batches of
``CONCURRENT_RUNS`` runs streamed through langgraph_sdk, one client per instance, runs alternating between
the instances. The setups run one after another, never side by side, on the same stand-ins; Postgres and
Redis are throwaway ones (``deploy/services.py``). The dev server gets ``--n-jobs-per-worker 30`` and each
Aegra instance 3 workers x 10 jobs, so none queues a run for lack of slots.

Printed: per setup, the median over rounds of the batch's wall time and of the per-run median, each also
as a ratio against ``langgraph dev`` measured in the same run. The machine has two cores: the second
instance can only help as far as the first one is CPU-bound. Per Aegra setup, also where its per-run work
goes, read from the shared Postgres and Redis over the setup's runs (warm-up included): store writes,
checkpoint rows and bytes written (``pg_stat_user_tables``, ``pg_total_relation_size``) and events
published to Redis (``INFO commandstats``), each per run, and which graph namespaces the checkpoints
belong to.

CPU seconds per run of each process the setup runs on (the server, and for Aegra also its Postgres and
Redis), read from ``/proc/<pid>/stat`` of the process and its descendants (those that have exited count
through their parent's ``cutime``/``cstime``) before and after each measured batch, and as a ratio against
dev. Wall time stretches when other work shares the cores; the CPU a server spends on its runs barely
does, so the CPU ratios say where an instance's work goes even on a loaded machine.

Run: ``uv run python -m bench.scaleout`` (needs what ``./run.sh test`` installs: postgresql, redis-server
and deploy/.venv). Exits 1 when any run fails to deliver its report.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench.concurrency import MODEL_LATENCY_S, slow_happy_path
from bench.proc import tree_cpu_seconds
from deploy import services
from testkit.agent_server import AgentServer, stream_run
from testkit.scripted_model import ScriptedModelServer
from testkit.web import WebStandIn

CONCURRENT_RUNS = 30
ROUNDS = 2
CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
# Postgres backends flush their table counters when idle, within 10 s (PGSTAT_IDLE_INTERVAL).
STATS_FLUSH_S = 11.0


# Each process group of a setup by name, and the root pids whose process trees it sums.
Processes = Mapping[str, Callable[[], Sequence[int]]]


def cpu_sample(processes: Processes) -> dict[str, float]:
    return {name: sum(tree_cpu_seconds(pid) for pid in pids()) for name, pids in processes.items()}


@dataclass
class Measured:
    name: str
    walls: list[float] = field(default_factory=list)
    run_medians: list[float] = field(default_factory=list)
    delivered: int = 0
    total: int = 0
    events: Counter[str] = field(default_factory=Counter)
    # CPU seconds each process group spent over the measured batches (the warm-up left out).
    cpu: Counter[str] = field(default_factory=Counter)

    @property
    def cpu_per_run(self) -> dict[str, float]:
        return {name: seconds / self.total for name, seconds in self.cpu.items()}

    @property
    def cpu_total_per_run(self) -> float:
        return sum(self.cpu.values()) / self.total

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def per_run(self) -> float:
        return statistics.median(self.run_medians)


@dataclass(frozen=True)
class Counters:
    """Cumulative write counters of one deployment's Postgres and Redis at one moment."""

    store_writes: int
    checkpoint_rows: int
    checkpoint_bytes: int
    published: int

    def per_run(self, before: Counters, runs: int) -> str:
        return (
            f"store writes {(self.store_writes - before.store_writes) / runs:6.1f}, "
            f"checkpoint rows {(self.checkpoint_rows - before.checkpoint_rows) / runs:6.1f} "
            f"({(self.checkpoint_bytes - before.checkpoint_bytes) / runs / 1024:6.1f} KiB), "
            f"events published {(self.published - before.published) / runs:6.1f}"
        )


def read_counters(postgres: services.PostgresServer, redis: services.RedisServer) -> Counters:
    tables = ", ".join(f"'{table}'" for table in ("store", *CHECKPOINT_TABLES))
    sql = (
        "select relname, n_tup_ins + n_tup_upd + n_tup_del, pg_total_relation_size(relid) "
        f"from pg_stat_user_tables where relname in ({tables})"
    )
    rows = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", "postgres", "-d", services.DATABASE, "-Atc", sql],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    stats = {name: (int(writes), int(size)) for name, writes, size in (row.split("|") for row in rows)}
    info = subprocess.run(
        ["redis-cli", "-p", str(redis.port), "info", "commandstats"], capture_output=True, text=True, check=True
    ).stdout
    published = sum(
        int(line.split("calls=", 1)[1].split(",", 1)[0])
        for line in info.splitlines()
        if line.startswith(("cmdstat_publish:", "cmdstat_spublish:"))
    )
    return Counters(
        store_writes=stats.get("store", (0, 0))[0],
        checkpoint_rows=sum(stats.get(table, (0, 0))[0] for table in CHECKPOINT_TABLES),
        checkpoint_bytes=sum(stats.get(table, (0, 0))[1] for table in CHECKPOINT_TABLES),
        published=published,
    )


def checkpoints_by_namespace(postgres: services.PostgresServer) -> str:
    """How many checkpoints each namespace holds (the root graph's, or a subgraph's by its node name)."""
    sql = (
        "select case when checkpoint_ns = '' then '(root)' else split_part(checkpoint_ns, ':', 1) end, count(*) "
        "from checkpoints group by 1 order by 2 desc"
    )
    rows = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", "postgres", "-d", services.DATABASE, "-Atc", sql],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return ", ".join(row.replace("|", " ") for row in rows)


async def counted(
    setup: Awaitable[Measured], postgres: services.PostgresServer, redis: services.RedisServer, notes: list[str]
) -> Measured:
    """``setup`` measured, with the deployment's writes per run over it in ``notes``."""
    before = read_counters(postgres, redis)
    measured = await setup
    await asyncio.sleep(STATS_FLUSH_S)
    runs = measured.total + CONCURRENT_RUNS  # the warm-up's runs wrote too
    notes.append(f"{measured.name:<14} per run: {read_counters(postgres, redis).per_run(before, runs)}")
    return measured


async def one_run(client: LangGraphClient, n: int, kinds: Counter[str]) -> tuple[float, bool]:
    """One run streamed; the kinds of the events the client received are added to ``kinds``."""
    started = time.monotonic()
    try:
        run = await stream_run(client, f"How cheap are sodium batteries? ({n})", timeout=300)
    except Exception as exc:  # noqa: BLE001 - a failed run is counted and named, and the batch goes on
        print(f"    run {n} failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        return time.monotonic() - started, False
    kinds.update(event.split("|", 1)[0] for event, _ in run.parts)
    ok = [e.get("reason") for e in run.end_statuses] == ["report_delivered"]
    return time.monotonic() - started, ok


async def batch(clients: Sequence[LangGraphClient], kinds: Counter[str]) -> tuple[float, list[float], int]:
    started = time.monotonic()
    results = await asyncio.gather(*(one_run(clients[n % len(clients)], n, kinds) for n in range(CONCURRENT_RUNS)))
    return time.monotonic() - started, [t for t, _ in results], sum(ok for _, ok in results)


async def measure_setup(name: str, urls: Sequence[str], processes: Processes) -> Measured:
    clients = [get_client(url=url) for url in urls]
    measured = Measured(name)
    await batch(clients, Counter())  # warm-up
    for round_no in range(1, ROUNDS + 1):
        before = cpu_sample(processes)
        wall, times, delivered = await batch(clients, measured.events)
        measured.cpu.update({name: seconds - before[name] for name, seconds in cpu_sample(processes).items()})
        measured.walls.append(wall)
        measured.run_medians.append(statistics.median(times))
        measured.delivered += delivered
        measured.total += CONCURRENT_RUNS
        print(
            f"  {name} round {round_no}: wall {wall:6.2f} s, per-run median {measured.run_medians[-1]:6.2f} s, slowest {max(times):6.2f} s",
            flush=True,
        )
    return measured


def agent_settings(model: ScriptedModelServer, web: WebStandIn) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-bench-000000000000",
        "TAVILY_API_BASE_URL": web.base_url,
        "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
        "DRA_MAX_RETRIES": "0",
        "DRA_CLAIM_JUDGE": "off",
    }


async def run_bench() -> int:
    if gaps := services.missing():
        print(f"cannot run: this benchmark needs {', '.join(gaps)}", file=sys.stderr)
        return 2
    results: list[Measured] = []
    notes: list[str] = []
    with ScriptedModelServer() as model, WebStandIn() as web:
        model.set_scenario(slow_happy_path())
        settings = agent_settings(model, web)
        print(
            f"{CONCURRENT_RUNS} concurrent runs, {ROUNDS} rounds after a warm-up, {MODEL_LATENCY_S * 1000:.0f} ms per model call, 5 calls per run",
            flush=True,
        )

        dev = AgentServer(settings, jobs=CONCURRENT_RUNS).start()
        try:
            results.append(await measure_setup("langgraph dev", [dev.url], {"server": lambda: [dev.pid]}))
        finally:
            dev.stop()

        logs = Path(tempfile.mkdtemp(prefix="dra-bench-aegra-"))
        with services.PostgresServer() as postgres, services.RedisServer() as redis:
            env = services.aegra_environment(
                postgres.url, redis.url, **settings, WORKER_COUNT="3", N_JOBS_PER_WORKER="10", CRON_ENABLED="false"
            )
            services.migrate(env)
            first = services.AegraInstance(env, log_path=logs / "a.log").start(timeout=300)
            second: services.AegraInstance | None = None
            processes: Processes = {
                "server": lambda: [first.pid] + ([second.pid] if second is not None else []),
                "postgres": lambda: [postgres.pid],
                "redis": lambda: [redis.pid],
            }
            try:
                results.append(await counted(measure_setup("Aegra x1", [first.url], processes), postgres, redis, notes))
                second = services.AegraInstance(env, log_path=logs / "b.log").start(timeout=300)
                results.append(
                    await counted(measure_setup("Aegra x2", [first.url, second.url], processes), postgres, redis, notes)
                )
                notes.append(f"checkpoints by namespace, all Aegra runs: {checkpoints_by_namespace(postgres)}")
            finally:
                first.stop()
                if second is not None:
                    second.stop()

    baseline = results[0]
    print()
    print(f"{'setup':<14} {'batch wall':>11} {'vs dev':>7} {'per-run median':>15} {'vs dev':>7} {'delivered':>10}")
    for measured in results:
        print(
            f"{measured.name:<14} {measured.wall:10.2f}s {measured.wall / baseline.wall:6.2f}x "
            f"{measured.per_run:14.2f}s {measured.per_run / baseline.per_run:6.2f}x {measured.delivered:>5}/{measured.total}"
        )
    print()
    print("CPU seconds per run (measured batches), and the total against dev's server:")
    for measured in results:
        groups = ", ".join(f"{name} {seconds:5.3f}" for name, seconds in measured.cpu_per_run.items())
        server = measured.cpu_per_run["server"]
        print(
            f"{measured.name:<14} {groups}; server {server / baseline.cpu_per_run['server']:5.2f}x dev, "
            f"all {measured.cpu_total_per_run:5.3f} ({measured.cpu_total_per_run / baseline.cpu_total_per_run:5.2f}x dev)"
        )
    print()
    for measured in results:
        received = ", ".join(f"{kind} {count / measured.total:.1f}" for kind, count in measured.events.most_common())
        print(f"{measured.name:<14} events a client received per run: {received}")
    print("\n".join(notes))
    return 0 if all(m.delivered == m.total for m in results) else 1


def main() -> int:
    return asyncio.run(run_bench())


if __name__ == "__main__":
    sys.exit(main())
