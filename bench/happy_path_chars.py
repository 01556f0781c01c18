"""Characters a happy-path research run sends to models, per role, through the real dev server.

A happy-path run: the orchestrator plans, one research unit does one search and one fetch of a short
page, then the report. Every request body is measured as it arrives on the wire at the scripted model
server. The baseline, measured in the same run, is the orchestrator's stock deepagents toolbox (the
default ``task`` and ``write_todos`` descriptions plus the file tools ``create_deep_agent`` would add),
serialized the same way, to show what the trimmed toolbox saves on every orchestrator step.

Run: ``uv run python -m bench.happy_path_chars``. Exits 1 when the run sends more than 90,000 characters.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict

from langchain_core.utils.function_calling import convert_to_openai_tool

from bench.stack import running_stack
from testkit.agent_server import stream_run
from testkit.scenarios import (
    orchestrator,
    plan_and_delegate,
    researcher_reads,
    scenario,
    submit,
)
from testkit.web import SHORT_FACT, SHORT_TITLE

BUDGET_CHARS = 90_000


def stock_orchestrator_tools_chars() -> int:
    """What deepagents' default orchestrator toolbox weighs on the wire, per model call."""
    from deepagents.backends import StateBackend
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from langchain.agents.middleware import TodoListMiddleware

    tools = [*FilesystemMiddleware(backend=StateBackend()).tools, *TodoListMiddleware().tools]
    return len(json.dumps([convert_to_openai_tool(t) for t in tools]))


async def measure() -> dict[str, int]:
    with running_stack() as stack:
        model, web, server = stack.model, stack.web, stack.server
        url = web.url("/short")
        model.set_scenario(
            scenario(
                orchestrator(
                    plan_and_delegate("Find what the short page says"),
                    submit(
                        f"# Meeting note\n\nThe meeting moved to Thursday [1].\n\n## Sources\n[1] {SHORT_TITLE} — {url}\n"
                    ),
                ),
                researcher_reads(
                    url, query="sodium battery", finding="The meeting moved to Thursday.", quote=SHORT_FACT
                ),
            )
        )
        run = await stream_run(server.url, "What does the short page say?")
        if [e.get("reason") for e in run.end_statuses] != ["report_delivered"]:
            raise SystemExit(f"the happy path did not deliver: {run.end_statuses}")
        per_role: dict[str, int] = defaultdict(int)
        for request in model.requests():
            per_role[request["agent"] or "unmatched"] += request["body_chars"]
        return dict(per_role)


def main() -> int:
    per_role = asyncio.run(measure())
    total = sum(per_role.values())
    for role, chars in sorted(per_role.items()):
        print(f"{role:>17}: {chars:>8,} chars")
    print(f"{'total':>17}: {total:>8,} chars   budget {BUDGET_CHARS:,}   ratio {total / BUDGET_CHARS:.2f}")
    print(f"stock deepagents orchestrator toolbox per call (baseline): {stock_orchestrator_tools_chars():,} chars")
    return 0 if total <= BUDGET_CHARS else 1


if __name__ == "__main__":
    sys.exit(main())
