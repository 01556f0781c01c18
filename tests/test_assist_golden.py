"""Golden, per agent role: what the assist adds to a role's model requests, and that a hosted model gets none of it.

Each scenario runs the whole graph in process over real HTTP (the scripted model server, the web stand-in and
the sandbox service) twice: with the tier's hosted models and ``model_assist`` auto, as most users run it,
and on the ``local`` profile with a small local model in every slot, as ``docs/local-models.md`` tells a user.
Every text the assist writes for a role (``ASSIST_TEXTS``) must reach that role's requests on the local
profile and never reach them with the hosted models; the coding sub-agent has no assist text at all, so its
requests are the same either way.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from deep_research_agent.graph import build_graph
from deep_research_agent.settings import SLOTS, ResearchConfig
from testkit.sandbox_service import SandboxService
from testkit.scenarios import (
    coder,
    extractor,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES

# A 7B name, which states no small size: the local profile alone turns the assist on.
LOCAL_MODEL = "qwen2.5-7b-instruct"
PHAROS = ARTICLES["pharos-lighthouse"]
QUESTION = "Who built the Lighthouse of Alexandria and how tall was it? Cite sources."
UNIT = "Find who built the Lighthouse of Alexandria and how tall it was"
CLAIM = "The Lighthouse of Alexandria stood over 100 metres tall."
COPIED = findings_json(
    "dense prose answer to the unit",
    [{"finding": "one claim with its figures", "evidence": "the text you read", "source": "the page or passage URL"}],
)

# Every text the assist writes into a role's requests, as the scenarios below provoke it.
ASSIST_TEXTS: dict[str, list[str]] = {
    "orchestrator": ['{"name": "task", "arguments": {"description": "' + QUESTION],
    "research-subagent": [
        "Start with a `web_search` call.",
        "Read the best hit in full before relying on it, like this:\n" + '{"name": "web_fetch", "arguments": {"url": ',
        "If this answers the unit, reply with your findings JSON object now.",
        "read it with web_fetch.\nRead it like this:\n" + '{"name": "web_fetch", "arguments": {"url": ',
        "Reply with exactly one JSON object and nothing else, with the page you read as its source:",
        'Start with a web_search call, like this:\n{"name": "web_search", "arguments": {"query": "' + UNIT,
    ],
    "extract-subagent": [
        "You called no tool in this unit, so nothing was researched. Start with a ",
        ', like this:\n{"name": "',
    ],
    "coding-subagent": [],
}


def report(url: str) -> dict[str, Any]:
    return submit(f"# The Pharos\n\n{CLAIM.removesuffix('.')} [1].\n\n## Sources\n[1] {PHAROS.title} — {url}\n")


def scenarios(url: str) -> dict[str, list[dict[str, Any]]]:
    """Per role, the scenarios that provoke every assist text of ``ASSIST_TEXTS``."""
    reads = [
        turn(tool_calls=[call("web_search", query="lighthouse of alexandria")]),
        turn(tool_calls=[call("web_fetch", url=url)]),
    ]
    opens_as_file = turn(tool_calls=[call("read_file", file_path=url)])
    valid = findings_json(CLAIM, [{"finding": CLAIM, "evidence": "stood over 100 metres tall", "source": url}])
    return {
        # Answers a research question from memory, twice: nudged once, then the honest end.
        "orchestrator": [scenario(orchestrator(turn("Sostratus built it."), turn("It was Sostratus.")))],
        "research-subagent": [
            # Opens the page as a file, searches, reads the page, copies the example answer, then answers from it.
            scenario(
                orchestrator(plan_and_delegate(UNIT), report(url), repeat_last=True),
                researcher(opens_as_file, *reads, turn(content=COPIED), turn(content=valid)),
            ),
            # Answers without any tool first.
            scenario(
                orchestrator(plan_and_delegate(UNIT), report(url), repeat_last=True),
                researcher(turn("I cannot browse."), *reads, turn(content=valid)),
            ),
        ],
        "extract-subagent": [
            scenario(
                orchestrator(
                    turn(tool_calls=[call("task", description=UNIT, subagent_type="extract-subagent")]),
                    report(url),
                    repeat_last=True,
                ),
                extractor(turn("It was 100 m tall."), turn(content=findings_json("Nothing was read.", []))),
            )
        ],
        "coding-subagent": [
            scenario(
                orchestrator(
                    turn(tool_calls=[call("task", description="Print 2 + 2", subagent_type="coding-subagent")]),
                    report(url),
                    repeat_last=True,
                ),
                # Bounced once (no execute call), then handed over as it is.
                coder(*[turn("STATUS: failed\nSCRIPT: none\nOUTPUT: none\nNOTES: no sandbox call was made.")] * 2),
            )
        ],
    }


@pytest.fixture(scope="module")
def sent(model_server, web_server, sandbox_service) -> dict[tuple[str, bool], list[str]]:
    """Every message text each role's model was sent across its scenarios, hosted (False) and local (True).

    All the runs share one event loop, as they do on a server: langchain-openai keeps one HTTP client per
    endpoint for the process, whose connections belong to the loop that opened them."""
    return anyio.run(_all_runs, model_server, web_server, sandbox_service)


async def _all_runs(scripted: Any, web: Any, sandbox: SandboxService) -> dict[tuple[str, bool], list[str]]:
    return {
        (role, local): await requests_of_role(scripted, web, sandbox, role, local=local)
        for role in ASSIST_TEXTS
        for local in (False, True)
    }


def environ(scripted: Any, web: Any, sandbox: SandboxService, *, local: bool) -> dict[str, str]:
    base = {
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_API_KEY": "sk-test-0000",
        "TAVILY_API_BASE_URL": web.base_url,
        "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
        "DRA_CLAIM_JUDGE": "off",
        "DRA_MAX_RETRIES": "0",
        "LLM_SANDBOX_URL": sandbox.url,
        "LLM_SANDBOX_TOKEN": sandbox.token,
    }
    if not local:
        return base
    return {**base, "DRA_PROFILE": "local", **{f"DRA_MODEL_{slot.upper()}": LOCAL_MODEL for slot in SLOTS}}


async def requests_of_role(scripted: Any, web: Any, sandbox: SandboxService, role: str, *, local: bool) -> list[str]:
    """Every message text the role's model was sent across its scenarios; each run's ``run_start`` says the role's
    assist is on for the local model and off for the hosted one, and why."""
    graph = build_graph(ResearchConfig.resolve({}, environ=environ(scripted, web, sandbox, local=local)))
    texts: list[str] = []
    for number, sc in enumerate(scenarios(web.url(PHAROS.path))[role]):
        scripted.set_scenario(sc)
        run_id = f"golden-{role}-{local}-{number}"
        config = {"configurable": {"thread_id": run_id, "run_id": run_id, "clarify": False}}
        events = [
            chunk
            async for _, chunk in graph.astream(
                {"messages": [{"role": "user", "content": QUESTION}]}, config, stream_mode="custom", subgraphs=True
            )
        ]
        [start] = [e for e in events if e["type"] == "run_start"]
        assert start["assist"][role]["on"] is local, start["assist"]
        assert start["assist"][role]["reason"] == ("local_profile" if local else "hosted_model")
        texts += [message_text(m) for r in scripted.requests() if r["agent"] == role for m in r["body"]["messages"]]
    return texts


@pytest.mark.parametrize("role", list(ASSIST_TEXTS))
def test_the_assist_reaches_a_roles_requests_on_the_local_profile_and_never_with_a_hosted_model(sent, role):
    hosted, local = sent[role, False], sent[role, True]

    assert hosted and local, "the scenarios reached the role"
    for text in ASSIST_TEXTS[role]:
        assert any(text in message for message in local), f"the local profile's {role} never read: {text!r}"
        assert not any(text in message for message in hosted), f"a hosted {role} read: {text!r}"
    if not ASSIST_TEXTS[role]:
        assert [text.replace(LOCAL_MODEL, "") for text in local] == hosted


def test_without_the_assist_the_nudges_and_bounces_say_what_to_do_in_words(sent):
    orchestrator_texts, unit_texts = sent["orchestrator", False], sent["research-subagent", False]

    assert any("calling them through the tool-calling interface." in text for text in orchestrator_texts)
    assert (
        "You called no tool in this unit, so nothing was researched: research it with your tools, then answer."
        in unit_texts
    )
    bounce = next(text for text in unit_texts if text.startswith("Your findings were not accepted"))
    assert "Reply with exactly one JSON object and nothing else: " in bounce and "page you read" not in bounce
    assert any(
        text.endswith(
            "is a web address, and read_file opens only the skill files under /skills/: read it with web_fetch."
        )
        for text in unit_texts
    )
    assert not any('{"name": ' in text for text in orchestrator_texts + unit_texts), "no example call"
