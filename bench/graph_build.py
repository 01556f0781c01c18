"""How long ``make_graph`` takes per run: a cold build versus the cached (warm) path the server hits.

The dev server calls the factory on every run and every state read, on its event loop, so the warm path
must stay under 50 ms. Run: ``uv run python -m bench.graph_build``. Exits 1 when the warm median is over.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from deep_research_agent.graph import build_graph, make_graph
from deep_research_agent.settings import ResearchConfig

WARM_BUDGET_MS = 50.0
ROUNDS = 30


def run_config(i: int) -> dict:
    return {"configurable": {"apiKeys": {"OPENAI_API_KEY": "sk-bench-000000"}, "thread_id": f"t{i}", "run_id": f"r{i}"}}


def median_ms(fn, rounds: int) -> float:
    samples = []
    for i in range(rounds):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> int:
    loop = asyncio.new_event_loop()
    loop.run_until_complete(make_graph(run_config(0)))  # imports and first compile are a one-time cost of the process
    settings = ResearchConfig.resolve(run_config(0))
    cold = median_ms(lambda i: build_graph(settings), 10)
    warm = median_ms(lambda i: loop.run_until_complete(make_graph(run_config(i))), ROUNDS)
    loop.close()
    print(f"cold build (compile every time): {cold:8.2f} ms median")
    print(f"warm make_graph (cached):        {warm:8.2f} ms median   budget {WARM_BUDGET_MS:.0f} ms")
    print(f"ratio warm/cold:                 {warm / cold:8.4f}")
    return 0 if warm < WARM_BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
