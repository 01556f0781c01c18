"""The agent's sandbox client against the real sandbox service: what it adds to a raw HTTP exec, and what
offloading a large result costs next to cutting it.

Both baselines are measured in the same run, alternating with the measured calls:
- ``execute``: ``SandboxSession.execute("true")`` (the run's session, error mapping, output notes) against
  a bare ``httpx`` ``POST /sessions/{id}/exec`` on a session of its own;
- offload: ``fit_result`` of a 5,000-row JSON result with a sandbox (parse, series check, upload, stub)
  against the same call without one (parse and cut).

Run: ``uv run python -m bench.sandbox_client``. Exits 1 when the client's median exec is over 1.5x the raw one.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import httpx

from deep_research_agent.run import bound_run
from deep_research_agent.sandbox.connector import SandboxConnector
from deep_research_agent.settings import ResearchConfig
from deep_research_agent.tools.results import ResultLimits, fit_result
from testkit.sandbox_service import SandboxService

ROUNDS = 40
MAX_EXEC_RATIO = 1.5


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95) - 1]


async def main() -> int:
    with SandboxService() as service, bound_run() as run:
        environ = {"OPENAI_API_KEY": "sk-bench", "LLM_SANDBOX_URL": service.url, "LLM_SANDBOX_TOKEN": service.token}
        connector = SandboxConnector(ResearchConfig.resolve({}, environ))
        session = connector.session(run.attachments)
        async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=60) as raw:
            session_id = (await raw.post("/sessions", json={})).json()["session_id"]
            await session.execute("true")  # opens the run's session
            client_ms, raw_ms = [], []
            for _ in range(ROUNDS):
                raw_ms.append(await timed(lambda: raw.post(f"/sessions/{session_id}/exec", json={"command": "true"})))
                client_ms.append(await timed(lambda: session.execute("true")))
            await raw.delete(f"/sessions/{session_id}")

        rows = json.dumps([{"date": f"2026-{1 + n % 12:02d}-01", "id": n, "value": n * 1.5} for n in range(5000)])
        with_sandbox, without = ResultLimits(sandbox=connector), ResultLimits()
        offload_ms, cut_ms = [], []
        for n in range(10):
            text = rows + " " * n  # a new file each round, not one already written
            cut_ms.append(
                await timed(
                    lambda text=text: fit_result(
                        text, name="bench", cite_as='"MCP: bench"', limits=without, attachments=run.attachments
                    )
                )
            )
            offload_ms.append(
                await timed(
                    lambda text=text: fit_result(
                        text, name="bench", cite_as='"MCP: bench"', limits=with_sandbox, attachments=run.attachments
                    )
                )
            )
        await session.close()

    ratio = statistics.median(client_ms) / statistics.median(raw_ms)
    print(
        f"exec 'true' raw HTTP      median {statistics.median(raw_ms):7.1f} ms  p95 {p95(raw_ms):7.1f} ms  ({ROUNDS} calls)"
    )
    print(
        f"exec 'true' via client    median {statistics.median(client_ms):7.1f} ms  p95 {p95(client_ms):7.1f} ms  ratio {ratio:.2f}x"
    )
    print(f"5,000-row result, cut     median {statistics.median(cut_ms):7.1f} ms")
    print(
        f"5,000-row result, offload median {statistics.median(offload_ms):7.1f} ms  "
        f"ratio {statistics.median(offload_ms) / statistics.median(cut_ms):.2f}x ({len(rows):,} characters)"
    )
    return 0 if ratio <= MAX_EXEC_RATIO else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
