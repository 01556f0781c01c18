"""Concurrency: ten happy-path runs at once against one dev server, versus one run alone.

Every model call takes 200 ms (the scripted model's ``delay_s``), so a run spends most of its time
waiting on the model, as real runs do. Guards, metering and the ledger must not serialise runs: ten
concurrent runs should take little longer than one. The baseline (one run, after a warm-up) is
measured in the same process, alternating with the concurrent batch for several rounds, because the dev
server's queue picks runs up on a 0.5 s poll and one round alone is noisy.

All runs share one SDK client, as a long-lived frontend does. A fresh client per run spends about 25 ms
of the caller's CPU on its TLS context; ten of them at once delay the batch's run creation past a queue
poll, which is the client's cost, not the server's.

Run: ``uv run python -m bench.concurrency``. Exits 1 when the median ratio is over 1.5x, or any run fails
to deliver its report.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench.stack import running_stack
from testkit.agent_server import stream_run
from testkit.scenarios import (
    findings_json,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    triage,
)
from testkit.scripted_model import call, turn

CONCURRENT_RUNS = 10
MODEL_LATENCY_S = 0.2
RATIO_TARGET = 1.5
ROUNDS = 5
# Cites nothing: a citation to a page the run never read would be sent back by the report gate.
REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"


def slow_happy_path() -> dict:
    plan = plan_and_delegate("Find sodium prices")
    return scenario(
        triage(delay_s=MODEL_LATENCY_S),
        orchestrator(
            {**plan, "delay_s": MODEL_LATENCY_S},
            turn(tool_calls=[call("submit_report", report_markdown=REPORT)], delay_s=MODEL_LATENCY_S),
        ),
        researcher(
            turn(tool_calls=[call("web_search", query="sodium battery")], delay_s=MODEL_LATENCY_S),
            turn(content=findings_json("Cheap."), delay_s=MODEL_LATENCY_S),
        ),
    )


async def one_run(client: LangGraphClient) -> tuple[float, str]:
    started = time.monotonic()
    run = await stream_run(client, "How cheap are sodium batteries?", timeout=120)
    reasons = [e.get("reason") for e in run.end_statuses]
    return time.monotonic() - started, ",".join(map(str, reasons))


async def measure() -> int:
    with running_stack() as stack:
        stack.model.set_scenario(slow_happy_path())
        client = get_client(url=stack.server.url)
        # Warm-up: imports, graph compile, and a connection pool as wide as the batch, on both sides.
        await asyncio.gather(*(one_run(client) for _ in range(CONCURRENT_RUNS)))
        print(
            f"model latency per call: {MODEL_LATENCY_S * 1000:.0f} ms, 5 model calls per run (triage, orchestrator 2, researcher 2)"
        )
        ratios, delivered, total = [], 0, 0
        for round_no in range(1, ROUNDS + 1):
            single, single_end = await one_run(client)
            started = time.monotonic()
            results = await asyncio.gather(*(one_run(client) for _ in range(CONCURRENT_RUNS)))
            concurrent = time.monotonic() - started
            ratios.append(concurrent / single)
            ends = [single_end, *(end for _, end in results)]
            delivered += sum(end == "report_delivered" for end in ends)
            total += len(ends)
            print(
                f"round {round_no}: one run alone {single:5.2f} s | {CONCURRENT_RUNS} at once {concurrent:5.2f} s "
                f"(slowest {max(t for t, _ in results):5.2f} s) | ratio {ratios[-1]:4.2f}"
            )
        ratio = statistics.median(ratios)
        print(f"median ratio concurrent/single: {ratio:4.2f}   target <= {RATIO_TARGET}")
        print(f"reports delivered: {delivered}/{total}")
        return 0 if ratio <= RATIO_TARGET and delivered == total else 1


def main() -> int:
    return asyncio.run(measure())


if __name__ == "__main__":
    sys.exit(main())
