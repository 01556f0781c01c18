"""Memory of the dev server across runaway runs: the guards must keep it bounded.

The original design, driven by a model that repeats one search forever, never ended and grew the server
to 4 GB. This bench starts the stand-ins and one real ``langgraph dev``, warms it with happy-path runs
(the baseline, measured in the same process), then drives looping runs: a sub-agent repeating one
identical search (the loop guard stops it), a sub-agent paging through searches with new arguments every
time (only the run's budget stops it: its token or tool-call ceiling, whichever comes first), and the same
paging run stopped by the user's stop request after a second. It prints the server's RSS after each
phase, the ratio to the baseline, and how each looping run ended.

Run: ``uv run python -m bench.guards_memory``. Exits 1 when a looping run does not end by itself (or, when
stopped, as stopped by the user) or the RSS after the loops is more than 1.5x the baseline.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from langgraph_sdk import get_client

from bench.stack import running_stack
from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from testkit.agent_server import AgentServer, RunResult, stream_run
from testkit.scenarios import (
    findings_json,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import ScriptedModelServer, call, turn

RSS_RATIO_LIMIT = 1.5
LOOPING_RUNS = 3
# Cites nothing: a citation to a page the run never read would be sent back by the report gate.
REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"


def rss_mb(root_pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total_kb, pending = 0, [root_pid]
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total_kb += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kb / 1024


def happy_path() -> dict:
    return scenario(
        orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
        researcher(
            turn(tool_calls=[call("web_search", query="sodium battery")]), turn(content=findings_json("Cheap."))
        ),
    )


def identical_search_loop() -> dict:
    return scenario(
        orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
        researcher(turn(tool_calls=[call("web_search", query="sodium battery price")]), repeat_last=True),
    )


def paging_loop(pages: int) -> dict:
    searches = [
        turn(tool_calls=[call("web_search", query="sodium battery", max_results=1 + n % 20)]) for n in range(pages)
    ]
    return scenario(orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)), researcher(*searches))


async def drive(
    server: AgentServer, model: ScriptedModelServer, sc: dict, *, stop_after_s: float | None = None
) -> tuple[str, int, float]:
    """One run, stopped by the user after ``stop_after_s`` if given; returns its end (with the ceiling that
    halted it, if one did), tool calls and wall time."""
    model.set_scenario(sc)
    client = get_client(url=server.url)
    thread_id = (await client.threads.create())["thread_id"]
    started = time.monotonic()
    research = asyncio.create_task(
        stream_run(client, "How cheap are sodium batteries?", thread_id=thread_id, timeout=600)
    )
    if stop_after_s is not None:
        await asyncio.sleep(stop_after_s)
        for running in await client.runs.list(thread_id, status="running"):
            await client.store.put_item(list(STOP_REQUESTS_NAMESPACE), running["run_id"], {"by": "bench"})
    run: RunResult = await research
    took = time.monotonic() - started
    end = run.end_statuses[0] if run.end_statuses else {"state": "none", "reason": "stream ended without an end status"}
    halted = [e["reason"] for e in run.statuses("budget_halt")]
    usage = run.of_type("usage")
    label = f"{end['state']}/{end['reason']}" + (f" ({halted[0]})" if halted else "")
    return label, usage[0]["tool_calls"] if usage else -1, took


async def measure() -> int:
    with running_stack(DRA_MAX_RETRIES="0") as stack:
        server, model = stack.server, stack.model
        assert server.process is not None
        pid = server.process.pid
        for _ in range(3):
            await drive(server, model, happy_path())
        baseline = rss_mb(pid)
        print(f"baseline after 3 happy-path runs:        {baseline:8.1f} MB RSS")

        ended_alone = True
        for n in range(LOOPING_RUNS):
            end, calls, took = await drive(server, model, identical_search_loop())
            ended_alone &= end.startswith("done/")
            print(
                f"identical-search loop {n + 1}: {end:<36} {calls:4d} tool calls {took:6.1f} s  {rss_mb(pid):8.1f} MB RSS"
            )
        for n in range(LOOPING_RUNS):
            end, calls, took = await drive(server, model, paging_loop(400))
            ended_alone &= end.startswith("error/budget_exhausted") and calls <= 200
            print(
                f"paging loop {n + 1}:            {end:<36} {calls:4d} tool calls {took:6.1f} s  {rss_mb(pid):8.1f} MB RSS"
            )

        for n in range(LOOPING_RUNS):
            end, calls, took = await drive(server, model, paging_loop(400), stop_after_s=1.0)
            ended_alone &= end == "done/stopped_by_user"
            print(
                f"paging loop {n + 1}, stopped:   {end:<36} {calls:4d} tool calls {took:6.1f} s  {rss_mb(pid):8.1f} MB RSS"
            )

        after = rss_mb(pid)
        ratio = after / baseline
        print(f"after {3 * LOOPING_RUNS} looping runs:                {after:8.1f} MB RSS")
        print(f"ratio after/baseline:                    {ratio:8.2f}   limit {RSS_RATIO_LIMIT}")
        return 0 if ended_alone and ratio <= RSS_RATIO_LIMIT else 1


def main() -> int:
    return asyncio.run(measure())


if __name__ == "__main__":
    sys.exit(main())
