"""A burst of concurrent runs, profiled: what the harness costs per step over a bare LangGraph agent.

One ``langgraph dev`` with ``--n-jobs-per-worker N`` serves the product graph and, next to it, a bare
``create_agent`` graph (``bench/baseline_graph.py``) that makes the same number of model calls (six,
each taking ``MODEL_LATENCY_S`` at the scripted model), searches the same Tavily stand-in and reads the
same loopback page. The product's run is the happy path: triage, a plan and one research unit that
searches, reads the page and hands back a quoted finding, and a report citing it. For each graph, measured
in the same server and the same run of this script, over ``--rounds`` bursts that alternate between the
two graphs (medians), because CPU counters on a busy machine drift:

- **server CPU per run**: user + system seconds of the server's processes (``/proc/<pid>/stat``) over a
  burst of N runs, divided by N;
- **harness ms per model step**: the product's CPU per run minus the baseline's, over its model calls;
- **worst event-loop lag** during the burst: a probe task on the server's loop (``bench/probe_app.py``)
  sleeps 10 ms again and again; how late it woke, at worst;
- **checkpoint bytes per run**: the compact JSON of every checkpoint of the run's root graph
  (``threads.get_history``), and the number of those checkpoints (super-steps) per orchestrator turn;
- **wall ratio**: the median wall time of a run in the burst over one run alone;
- **memory**: the server's resident memory when it has started (graph imported, no run yet) and its peak
  during the bursts (sampled every 50 ms); their difference over N bounds what one run in flight costs
  (it also holds the caches the first runs fill), which is what sizing ``DRA_JOBS`` has to budget.

``--against REV`` measures the product as it was at ``REV`` (a temporary git worktree, served from its
``src``) in the same way, before the current tree, and prints the CPU ratio. ``--profile DIR`` samples the
server with py-spy (``uv tool install py-spy``) during each burst, writes the collapsed stacks to
``DIR/<graph>.txt`` (flamegraph.pl and speedscope read them) and prints the functions of this package and
of the libraries that hold the most samples.

Run: ``uv run python -m bench.burst [--runs 30] [--rounds 3] [--against HEAD~1] [--profile /tmp/prof]``. Exits 1 when
a run fails to deliver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench.baseline_graph import BASELINE_AGENT
from bench.proc import stat_fields, tree_cpu_seconds
from testkit.agent_server import GRAPH_ID, PROJECT_ROOT, STREAM_MODES, AgentServer
from testkit.scenarios import (
    orchestrator,
    plan_and_delegate,
    researcher_reads,
    scenario,
    submit,
    triage,
)
from testkit.scripted_model import ScriptedModelServer, agent, call, turn
from testkit.web import ARTICLES, WebStandIn

MODEL_LATENCY_S = 0.2
BASELINE_ID = "bare_baseline"
ARTICLE = ARTICLES["halvorsen-cell"]
QUOTE = "reached an energy density of 412 Wh/kg in independent tests"
REPORT = "# Sodium-glass batteries\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n## Sources\n"
SETTLE_S = 1.5
_idle_rate: dict[int, float] = {}


def scripted_runs(web: WebStandIn) -> dict[str, Any]:
    """The product's happy path (triage, orchestrator 2, researcher 3) and the baseline's six calls."""
    url = web.url(ARTICLE.path)
    report = f"{REPORT}[1] {ARTICLE.title} — {url}\n"
    reads = researcher_reads(
        url, query="sodium glass battery energy density", finding="The Halvorsen cell reached 412 Wh/kg.", quote=QUOTE
    )
    for step in reads["turns"]:
        step["delay_s"] = MODEL_LATENCY_S
    return scenario(
        triage(delay_s=MODEL_LATENCY_S),
        agent(
            BASELINE_AGENT,
            *(
                turn(tool_calls=[step], delay_s=MODEL_LATENCY_S)
                for step in (
                    call("note", text="plan"),
                    call("web_search", query="sodium glass battery energy density"),
                    call("web_fetch", url=url),
                    call("note", text="findings"),
                )
            ),
            turn(tool_calls=[call("note", text="report")], delay_s=MODEL_LATENCY_S),
            turn(content=report, delay_s=MODEL_LATENCY_S),
        ),
        orchestrator(
            {**plan_and_delegate("Find the energy density of sodium-glass batteries"), "delay_s": MODEL_LATENCY_S},
            {**submit(report), "delay_s": MODEL_LATENCY_S},
        ),
        reads,
    )


@dataclass
class Burst:
    cpu_per_run_s: float
    worst_lag_ms: float
    one_run_s: float
    median_in_burst_s: float
    delivered: int
    runs: int
    peak_rss_mb: float

    @property
    def wall_ratio(self) -> float:
        return self.median_in_burst_s / self.one_run_s


def server_processes(server: AgentServer) -> Iterator[tuple[Path, list[str]]]:
    """Each process of the server's process group: its ``/proc`` folder and the ``stat`` fields after the command."""
    assert server.process is not None
    group = os.getpgid(server.process.pid)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        if (fields := stat_fields(int(entry.name))) is None:
            continue
        if int(fields[2]) == group:  # fields after the command: state, ppid, pgrp, ...
            yield entry, fields


def server_cpu_s(server: AgentServer) -> float:
    """User + system CPU seconds of the server and its descendants, children reaped included."""
    assert server.process is not None
    return tree_cpu_seconds(server.process.pid)


def server_rss_mb(server: AgentServer) -> float:
    """Resident memory of the server's processes (the dev server and its children), in MiB."""
    total_kb = 0
    for entry, _ in server_processes(server):
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        total_kb += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kb / 1024


@contextmanager
def peak_rss(server: AgentServer) -> Iterator[list[float]]:
    """The server's largest resident memory while the block runs (``[peak]`` once it ends), sampled every 50 ms."""
    samples, done = [server_rss_mb(server)], threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            samples.append(server_rss_mb(server))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    peak: list[float] = []
    try:
        yield peak
    finally:
        done.set()
        sampler.join()
        peak.append(max(samples))


def idle_cpu_s(server: AgentServer, seconds: float) -> float:
    """What the idle server burns in ``seconds`` (queue polls, sweeps), measured once per server."""
    assert server.process is not None
    if server.process.pid not in _idle_rate:
        before = server_cpu_s(server)
        time.sleep(3.0)
        _idle_rate[server.process.pid] = (server_cpu_s(server) - before) / 3.0
    return _idle_rate[server.process.pid] * seconds


async def one_run(client: LangGraphClient, graph: str) -> tuple[float, bool, str]:
    started = time.monotonic()
    thread_id = (await client.threads.create())["thread_id"]
    delivered = False
    async for part in client.runs.stream(
        thread_id, graph, input={"messages": [{"role": "user", "content": "How cheap are sodium batteries?"}]},
        stream_mode=STREAM_MODES, stream_subgraphs=True,
    ):  # fmt: skip
        if (
            part.event.startswith("custom")
            and isinstance(part.data, dict)
            and part.data.get("reason") == "report_delivered"
        ):
            delivered = True
    state = await client.threads.get_state(thread_id)
    if graph == BASELINE_ID:
        delivered = bool(state["values"]["messages"]) and state["values"]["messages"][-1]["content"].startswith(REPORT)
    return time.monotonic() - started, delivered, thread_id


@contextmanager
def sampled(server: AgentServer, out: Path | None) -> Iterator[None]:
    """py-spy sampling the server into ``out`` (collapsed stacks) while the block runs; nothing without ``out``."""
    if out is None:
        yield
        return
    assert server.process is not None
    spy = subprocess.Popen(
        ["py-spy", "record", "--pid", str(server.process.pid), "--format", "raw", "--rate", "200", "--output", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1.0)  # py-spy attaches
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=30)


def hottest(collapsed: Path, top: int = 12) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """This package's and the other code's frames present in the most samples (inclusive), as shares of
    all samples; frames in more than half of them (the server's entry and event-loop chain) are left out."""
    counts: dict[str, int] = {}
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        frames = set()
        for frame in stack.split(";"):
            name, _, where = frame.partition(" (")
            frames.add(f"{name} ({where.split(':')[0]}")
        for frame in frames:
            counts[frame] = counts.get(frame, 0) + int(n)
    ranked = (
        [(frame, n / total) for frame, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n / total <= 0.5]
        if total
        else []
    )
    ours = [r for r in ranked if "deep_research_agent" in r[0]][:top]
    theirs = [r for r in ranked if "deep_research_agent" not in r[0] and "asyncio" not in r[0]][:top]
    return ours, theirs


async def burst(
    server: AgentServer, client: LangGraphClient, probe: httpx.AsyncClient, graph: str, runs: int, profile: Path | None
) -> Burst:
    alone = sorted([(await one_run(client, graph))[0] for _ in range(3)])[1]
    # The server finishes a run after its stream ends (checkpoints, the queue); settle before and after,
    # so the burst's CPU holds all of its own work and none of what came before.
    await asyncio.sleep(SETTLE_S)
    await probe.get("/bench/lag")  # a fresh window
    with sampled(server, profile / f"{graph}.txt" if profile else None), peak_rss(server) as peak:
        before = server_cpu_s(server)
        results = await asyncio.gather(*(one_run(client, graph) for _ in range(runs)))
        lag = (await probe.get("/bench/lag")).json()
    await asyncio.sleep(SETTLE_S)
    cpu = server_cpu_s(server) - before - idle_cpu_s(server, SETTLE_S)
    return Burst(
        cpu_per_run_s=cpu / runs,
        worst_lag_ms=lag["worst_ms"],
        one_run_s=alone,
        median_in_burst_s=statistics.median(t for t, _, _ in results),
        delivered=sum(ok for _, ok, _ in results),
        runs=runs,
        peak_rss_mb=peak[0],
    )


async def checkpoints(client: LangGraphClient, graph: str) -> tuple[int, int]:
    """Bytes (compact JSON) and number of the root graph's checkpoints for one run of ``graph``."""
    _, _, thread_id = await one_run(client, graph)
    history = await client.threads.get_history(thread_id, limit=1000)
    return sum(len(json.dumps(h["values"], separators=(",", ":")).encode()) for h in history), len(history)


@contextmanager
def serving(model: ScriptedModelServer, web: WebStandIn, runs: int, src: Path | None) -> Iterator[AgentServer]:
    env = {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-bench-000000000000",
        "TAVILY_API_BASE_URL": web.base_url,
        "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
        # The bare graph it is compared with makes no judge call.
        "DRA_CLAIM_JUDGE": "off",
        "PYTHONPATH": os.pathsep.join(str(p) for p in (src, PROJECT_ROOT) if p),
    }
    server = AgentServer(
        env, jobs=runs, graphs={BASELINE_ID: "bench.baseline_graph:make_graph"}, http_app="bench.probe_app:app"
    ).start()
    try:
        yield server
    finally:
        server.stop()


def median_burst(bursts: list[Burst]) -> Burst:
    """Each figure's median over the rounds; deliveries summed."""
    return Burst(
        cpu_per_run_s=statistics.median(b.cpu_per_run_s for b in bursts),
        worst_lag_ms=statistics.median(b.worst_lag_ms for b in bursts),
        one_run_s=statistics.median(b.one_run_s for b in bursts),
        median_in_burst_s=statistics.median(b.median_in_burst_s for b in bursts),
        delivered=sum(b.delivered for b in bursts),
        runs=sum(b.runs for b in bursts),
        peak_rss_mb=max(b.peak_rss_mb for b in bursts),
    )


async def measure_tree(
    model: ScriptedModelServer, web: WebStandIn, runs: int, rounds: int, src: Path | None, profile: Path | None
) -> dict[str, Any]:
    with serving(model, web, runs, src) as server:
        client = get_client(url=server.url)
        started_rss_mb = server_rss_mb(server)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as probe:
            await probe.post("/bench/lag")
            for graph in (GRAPH_ID, BASELINE_ID):  # warm-up: imports, compile, pools as wide as the burst
                await asyncio.gather(*(one_run(client, graph) for _ in range(runs)))
            model.set_scenario(scripted_runs(web))
            await one_run(client, GRAPH_ID)
            steps = len(model.requests())
            orchestrator_turns = sum(r["agent"] == "orchestrator" for r in model.requests())
            bursts: dict[str, list[Burst]] = {GRAPH_ID: [], BASELINE_ID: []}
            for round_no in range(rounds):
                for graph in bursts:  # alternating, so drift on a busy machine hits both alike
                    sample = profile if round_no == 0 else None
                    bursts[graph].append(await burst(server, client, probe, graph, runs, sample))
            result = {
                "steps": steps,
                "orchestrator_turns": orchestrator_turns,
                "product": median_burst(bursts[GRAPH_ID]),
                "baseline": median_burst(bursts[BASELINE_ID]),
                "product_checkpoints": await checkpoints(client, GRAPH_ID),
                "baseline_checkpoints": await checkpoints(client, BASELINE_ID),
                "runs": runs,
                "rounds": rounds,
                "started_rss_mb": started_rss_mb,
            }
    return result


@contextmanager
def tree_at(rev: str) -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="dra-bench-rev-")) / "tree"
    subprocess.run(["git", "-C", str(PROJECT_ROOT), "worktree", "add", "--detach", "-q", str(where), rev], check=True)
    try:
        yield where / "src"
    finally:
        subprocess.run(["git", "-C", str(PROJECT_ROOT), "worktree", "remove", "--force", str(where)], check=False)


def report(name: str, m: dict[str, Any]) -> None:
    p, b = m["product"], m["baseline"]
    (p_bytes, p_points), (b_bytes, b_points) = m["product_checkpoints"], m["baseline_checkpoints"]
    harness_ms = (p.cpu_per_run_s - b.cpu_per_run_s) / m["steps"] * 1000
    print(
        f"--- {name} ({m['runs']} runs at once, medians of {m['rounds']} rounds; {m['steps']} model calls per product run, "
        f"{MODEL_LATENCY_S * 1000:.0f} ms each)"
    )
    print(
        f"server CPU per run:      product {p.cpu_per_run_s * 1000:7.1f} ms | baseline {b.cpu_per_run_s * 1000:7.1f} ms | ratio {p.cpu_per_run_s / b.cpu_per_run_s:5.2f}"
    )
    print(f"harness per model step:  {harness_ms:6.1f} ms over the baseline   (goal <= 25 ms)")
    print(
        f"worst event-loop lag:    product {p.worst_lag_ms:7.1f} ms | baseline {b.worst_lag_ms:7.1f} ms   (goal <= 20 ms)"
    )
    print(
        f"wall, burst / one run:   product {p.wall_ratio:5.2f} ({p.median_in_burst_s:.2f} s / {p.one_run_s:.2f} s) | baseline {b.wall_ratio:5.2f}   (goal <= 1.6)"
    )
    peak = max(p.peak_rss_mb, b.peak_rss_mb)
    per_run = (peak - m["started_rss_mb"]) / m["runs"]
    print(
        f"server memory:           {m['started_rss_mb']:.0f} MiB started, {peak:.0f} MiB at peak in a burst: <= {per_run:.1f} MiB per run in flight"
    )
    print(
        f"checkpoints per run:     product {p_points} ({p_bytes / 1024:.1f} KB, {p_points / m['orchestrator_turns']:.1f} per orchestrator turn) | baseline {b_points} ({b_bytes / 1024:.1f} KB)"
    )
    print(f"delivered:               product {p.delivered}/{p.runs} | baseline {b.delivered}/{b.runs}")


async def main_async(runs: int, rounds: int, against: str | None, profile: Path | None) -> int:
    with ScriptedModelServer() as model, WebStandIn() as web:
        model.set_scenario(scripted_runs(web))
        measured: dict[str, dict[str, Any]] = {}
        if against:
            with tree_at(against) as src:
                measured[against] = await measure_tree(model, web, runs, rounds, src, None)
            report(against, measured[against])
        measured["this tree"] = current = await measure_tree(model, web, runs, rounds, None, profile)
        report("this tree", current)
        if profile:
            for graph in (GRAPH_ID, BASELINE_ID):
                ours, theirs = hottest(profile / f"{graph}.txt")
                print(f"--- hottest frames in the {graph} burst (share of samples, inclusive; {profile / graph}.txt)")
                for frame, share in [*ours, *theirs]:
                    print(f"{share * 100:5.1f} %  {frame}")
        if against:
            old = measured[against]["product"].cpu_per_run_s
            print(
                f"server CPU per product run, this tree / {against}: {current['product'].cpu_per_run_s / old:5.2f}   (goal <= 0.5)"
            )
        ok = all(m[graph].delivered == m[graph].runs for m in measured.values() for graph in ("product", "baseline"))
        return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="bursts per graph, alternating; figures are medians")
    parser.add_argument("--against", help="a git revision to measure side by side, e.g. HEAD~1")
    parser.add_argument("--profile", type=Path, help="a folder for py-spy's collapsed stacks of each burst")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    return asyncio.run(main_async(args.runs, args.rounds, args.against, args.profile))


if __name__ == "__main__":
    sys.exit(main())
