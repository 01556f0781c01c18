"""The happy path's prompt budget: characters counted on the wire, never timed.

A dev server with default settings (only the stand-ins wired in, as a fresh clone's would be) runs the
happy path of ``bench/happy_path_chars.py`` (plan, one unit that searches once and reads one page, the
report); the model server counts what every request carried. The run must stay within the budget: at most
26,000 characters in at most 6 model calls, and at most 2,500 characters of tool schemas on each research
sub-agent call.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.happy_path_chars import BUDGET_CALLS, BUDGET_CHARS, RESEARCHER, happy_path, over_budget
from testkit.agent_server import AgentServer
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
def default_server(model_server, web_server) -> Iterator[AgentServer]:
    """A dev server without the session server's corpus: the defaults a deployment starts from."""
    server = AgentServer(agent_env(model_server, web_server)).start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_happy_path_stays_within_its_prompt_budget(default_server, scripted, web):
    calls = await happy_path(default_server.url, scripted, web)

    assert over_budget(calls) == []
    assert {call.role for call in calls} == {"triage", "orchestrator", RESEARCHER}
    assert len(calls) <= BUDGET_CALLS and sum(call.chars for call in calls) <= BUDGET_CHARS
