"""Every role's system prompt, rendered by the whole graph build, is exactly what it was; each feature
owns its section of it.

The golden prompts in ``fixtures/prompts/`` were recorded from the graph before each feature came to own
its prompt section; the graph is built for each combination below (web or not, corpora, the knowledge
base, MCP servers with and without the deployment's guidance, a sandbox with and without skill helpers,
skills, a domain prompt) and each agent's ``system_prompt`` and each sub-agent's description must match
them byte for byte (and each agent's tools and middleware, recorded before ``build_graph`` was split into
its builders, must match them in order), and so must what the default run is shown of them (its offer,
``lifecycle/offer.py``: no task, no follow-up, no knowledge-base entries). Record them again only on purpose, after a reviewed prompt change:
``DRA_RECORD_PROMPTS=1 uv run pytest tests/test_prompt_sections.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from langchain_core.tools import StructuredTool

from deep_research_agent import graph, prompts
from deep_research_agent.corpora.backend import CorpusMeta
from deep_research_agent.corpora.catalog import Catalog, CorpusEntry
from deep_research_agent.corpora.prompt import corpora_section
from deep_research_agent.delivery.follow_up import follow_up_section
from deep_research_agent.domain.names import Role
from deep_research_agent.extensions.skills import load_skills
from deep_research_agent.knowledge.prompt import knowledge_section
from deep_research_agent.lifecycle import RunOpeningMiddleware
from deep_research_agent.lifecycle.offer import OfferMiddleware, RunOffer
from deep_research_agent.mcp.listing import Listing
from deep_research_agent.mcp.prompt import mcp_section
from deep_research_agent.sandbox.prompt import code_execution_section, skill_helpers_section
from deep_research_agent.settings import ResearchConfig
from deep_research_agent.settings.corpora import CorpusSpec
from deep_research_agent.settings.mcp_servers import McpServer
from deep_research_agent.tasks.prompt import tasks_section
from deep_research_agent.tools.web_prompt import no_web_section, web_section

GOLDEN = Path(__file__).parent / "fixtures" / "prompts"
EXTENSIONS = Path(__file__).parent / "fixtures" / "extensions"
RECORD = os.environ.get("DRA_RECORD_PROMPTS") == "1"

SANDBOX = {"LLM_SANDBOX_URL": "http://127.0.0.1:9", "LLM_SANDBOX_TOKEN": "t" * 24}
NO_SKILLS = {"DRA_SKILLS_DIR": str(EXTENSIONS / "no-such-folder")}
HELPER_SKILLS = {"DRA_SKILLS_DIR": str(EXTENSIONS / "skills")}
NO_WEB = {"DRA_WEB_SEARCH": "false"}
NO_KNOWLEDGE = {"DRA_KNOWLEDGE_BASE": "false"}
DOMAIN = {"DRA_DOMAIN_PROMPT": "  Battery chemistry for grid storage; prefer peer-reviewed sources.  "}
MCP_GUIDANCE = {"DRA_MCP_PROMPT": "Prefer the prices server for anything about tariffs."}


def _tool(name: str) -> StructuredTool:
    async def run(**kwargs: object) -> str:
        return name

    return StructuredTool(
        name=name, description=f"{name} tool", args_schema={"type": "object", "properties": {}}, coroutine=run
    )


def _server(label: str) -> McpServer:
    return McpServer(label=label, url=f"http://127.0.0.1:3901/{label}", transport="streamable_http", origin="run")


MCP = (
    Listing(_server("prices"), (_tool("price_history"), _tool("tariffs"))),
    Listing(_server("wiki"), (_tool("page"),), cached=True),
    Listing(_server("down"), error="connection refused"),
)
MCP_DOWN = (Listing(_server("down"), error="connection refused"),)


def _entry(name: str, title: str = "", description: str = "", *, passages: int = 40) -> CorpusEntry:
    spec = CorpusSpec(name=name, root=f"/srv/{name}", title=title, description=description)
    meta = CorpusMeta(
        name=name, root=spec.root, title=title, description=description, html="docs", exclude=(),
        indexed_at="2025-03-04T05:06:07Z", documents=12, passages=passages, text_chars=90_000,
        source_bytes=3_500_000, unreadable=0,
    )  # fmt: skip
    return CorpusEntry(spec=spec, index=Path(f"/srv/index/{name}.sqlite"), meta=meta)


CORPORA = Catalog(
    (
        _entry("halvorsen", "Halvorsen engine manuals", "Service and repair manuals"),
        _entry("pg-docs"),
        _entry("empty", "Nothing indexed yet", passages=0),
    )
)

# name -> (environment, MCP listings, corpora)
COMBINATIONS: dict[str, tuple[dict[str, str], tuple[Listing, ...], Catalog | None]] = {
    "defaults": ({}, (), None),
    "bare": ({**NO_SKILLS, **NO_KNOWLEDGE, "DRA_MAX_CHARTS": "0"}, (), None),
    "no-web": ({**NO_WEB, **NO_SKILLS}, (), None),
    "no-web-corpora-domain": ({**NO_WEB, **DOMAIN, **NO_KNOWLEDGE}, (), CORPORA),
    "web-corpora-sandbox": ({**SANDBOX, **NO_SKILLS}, (), CORPORA),
    "mcp": ({**NO_KNOWLEDGE, **NO_SKILLS}, MCP, None),
    "mcp-guidance-down": ({**MCP_GUIDANCE}, MCP_DOWN, None),
    "everything": ({**SANDBOX, **HELPER_SKILLS, **DOMAIN, **MCP_GUIDANCE}, MCP, CORPORA),
    "sandbox-no-web-mcp": ({**SANDBOX, **NO_WEB, **HELPER_SKILLS, **NO_KNOWLEDGE}, MCP, None),
}


def rendered(environ: dict[str, str], mcp: tuple[Listing, ...], corpora: Catalog | None) -> dict[str, Any]:
    """Every agent's system prompt and every sub-agent's description, as the graph build hands them over."""
    settings = ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test-0000", **environ})
    with (
        patch.object(graph, "create_agent", wraps=graph.create_agent) as create_agent,
        patch.object(graph, "SubAgentMiddleware", wraps=graph.SubAgentMiddleware) as subagent_middleware,
    ):
        graph.build_graph(settings, mcp=mcp, corpora=corpora)
    prompts = {call.kwargs["name"]: call.kwargs["system_prompt"] for call in create_agent.call_args_list}
    descriptions = {
        subagent["name"]: subagent["description"]
        for call in subagent_middleware.call_args_list
        for subagent in call.kwargs["subagents"]
    }
    # Not prompt text, but what a prompt describes must stay what the agent has: its tools and middleware.
    tools = {call.kwargs["name"]: [tool.name for tool in call.kwargs["tools"]] for call in create_agent.call_args_list}
    middleware = {call.kwargs["name"]: _stack(call.kwargs["middleware"]) for call in create_agent.call_args_list}
    # What the default run is shown: a thread's first turn, untasked, its user's knowledge base empty.
    lean = RunOffer(decided=True)
    layers = {call.kwargs["name"]: call.kwargs["middleware"] for call in create_agent.call_args_list}
    lean_prompts = {name: _one(stack, OfferMiddleware).prompt_for(lean) for name, stack in layers.items()}
    roster = _one(layers[Role.ORCHESTRATOR], RunOpeningMiddleware).roster
    return {
        "system_prompts": prompts,
        "default_run_prompts": {name: prompt for name, prompt in lean_prompts.items() if prompt != prompts[name]},
        "descriptions": descriptions,
        "tools": tools,
        "default_run_tools": roster.offered(lean),
        "middleware": middleware,
    }


def _one(middleware: list[Any], kind: type[Any]) -> Any:
    return next(layer for layer in middleware if isinstance(layer, kind))


def _stack(middleware: list[Any]) -> list[str]:
    """Each middleware's name, the guard chain's with its model and tool guards."""
    names = []
    for layer in middleware:
        names.append(layer.name)
        for kind in ("model_guards", "tool_guards"):
            names += [f"  {kind[:-7]}: {guard.name}" for guard in getattr(layer, kind, ())]
    return names


@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_each_roles_prompt_renders_exactly_as_recorded(name: str):
    got = rendered(*COMBINATIONS[name])
    path = GOLDEN / f"{name}.json"
    if RECORD:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert got["system_prompts"].keys() == expected["system_prompts"].keys()
    for role, prompt in expected["system_prompts"].items():
        assert got["system_prompts"][role] == prompt, f"the {role} prompt of {name!r} changed"
    assert got["descriptions"] == expected["descriptions"]
    assert got["default_run_prompts"] == expected["default_run_prompts"]
    assert got["tools"] == expected["tools"]
    assert got["default_run_tools"] == expected["default_run_tools"]
    assert got["middleware"] == expected["middleware"]


def test_the_combinations_cover_every_section():
    """Each optional section appears in at least one recorded prompt, and is absent from another."""
    recorded = [json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8")) for name in COMBINATIONS]
    everything = [json.dumps(r["system_prompts"]) for r in recorded]
    for heading in (
        "## The web",
        "## No web access",
        "## Local corpora",
        "## Knowledge base",
        "## MCP tools",
        "MCP servers: `prices`",
        "Prefer the prices server",
        "## Code execution\\nA sandbox is attached",
        "## Code execution\\nNo code execution in this run",
        "## Skills",
        "## Skill helpers",
        "## DOMAIN CONTEXT",
        "and whether the web is needed too",
    ):
        present = [heading in text for text in everything]
        assert any(present) and not all(present), heading


# --- each feature owns its section ---------------------------------------------------------------------

OTHERS = (Role.EXTRACT_SUBAGENT, Role.CODING_SUBAGENT)
PLANNERS = (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT)


def test_a_feature_says_nothing_to_a_role_it_does_not_concern():
    skills = load_skills(EXTENSIONS / "skills")
    for role in OTHERS:
        assert follow_up_section(role) == tasks_section(role, enabled=True) == ""
        assert web_section(role, web_search=True) == no_web_section(role, web_search=False) == ""
        assert corpora_section(role, CORPORA, web_search=True) == ""
        assert knowledge_section(role, enabled=True) == ""
        assert skills.prompt_section(role) == ""
        assert mcp_section(role, MCP, deployment_prompt="guidance") == ""
        assert code_execution_section(role, sandbox=True) == code_execution_section(role, sandbox=False) == ""
    assert follow_up_section(Role.RESEARCH_SUBAGENT) == tasks_section(Role.RESEARCH_SUBAGENT, enabled=True) == ""
    assert web_section(Role.ORCHESTRATOR, web_search=True) == knowledge_section(Role.ORCHESTRATOR, enabled=True) == ""
    for role in (*PLANNERS, Role.EXTRACT_SUBAGENT):
        assert skill_helpers_section(role, ("/workspace/skills/t/h.py",)) == ""


def test_a_feature_says_nothing_when_the_run_lacks_it():
    for role in PLANNERS:
        assert web_section(role, web_search=False) == no_web_section(role, web_search=True) == ""
        assert corpora_section(role, Catalog((_entry("empty", passages=0),)), web_search=True) == ""
        assert knowledge_section(role, enabled=False) == tasks_section(role, enabled=False) == ""
        assert load_skills(EXTENSIONS / "no-such-folder").prompt_section(role) == ""
        assert mcp_section(role, MCP_DOWN, deployment_prompt="guidance") == ""
    assert skill_helpers_section(Role.CODING_SUBAGENT, ()) == ""


def test_each_role_gets_its_own_wording_of_a_shared_feature():
    orchestrator = corpora_section(Role.ORCHESTRATOR, CORPORA, web_search=False)
    subagent = corpora_section(Role.RESEARCH_SUBAGENT, CORPORA, web_search=False)
    assert "40 passages" in orchestrator and "whether the web" not in orchestrator
    assert "`pg-docs` (pg-docs)" in subagent and "`empty`" not in subagent
    assert mcp_section(Role.ORCHESTRATOR, MCP).startswith("Research sub-agents can also query these MCP servers")
    assert mcp_section(Role.RESEARCH_SUBAGENT, MCP).startswith("## MCP tools")
    assert mcp_section(Role.RESEARCH_SUBAGENT, MCP, deployment_prompt=" Be brief. ").endswith(".\nBe brief.")
    assert code_execution_section(Role.ORCHESTRATOR, sandbox=True) != code_execution_section(
        Role.ORCHESTRATOR, sandbox=False
    )


def test_a_section_template_refuses_a_slot_left_empty_or_a_value_without_a_slot():
    with pytest.raises(KeyError, match="and_web"):
        prompts.fill(prompts.Prompt.CORPORA_ORCHESTRATOR, corpora="- `a`")
    with pytest.raises(KeyError, match="extra"):
        prompts.fill(prompts.Prompt.CORPORA_SUBAGENT, corpora="`a`", extra="x")
    # A value is inserted as it is, even when it looks like a slot.
    assert "{and_web}" in prompts.fill(prompts.Prompt.CORPORA_SUBAGENT, corpora="{and_web}")


def test_a_role_prompt_joins_its_sections_in_order_and_skips_the_empty_ones():
    assembled = prompts.assemble(prompts.Prompt.DIRECT_ANSWER, ["## A\na", "", "## B\nb"], domain_prompt=" d ")
    assert (
        assembled == prompts.template(prompts.Prompt.DIRECT_ANSWER) + "\n\n## A\na\n\n## B\nb\n\n## DOMAIN CONTEXT\nd"
    )


def test_without_clarifying_turns_the_orchestrators_step_on_asking_into_one_instruction_to_proceed() -> None:
    prompt = prompts.template(prompts.Prompt.ORCHESTRATOR)

    changed = prompts.without_clarifying(prompt)

    assert "request_clarification" in prompt and "request_clarification" not in changed
    assert prompts.template(prompts.Prompt.NO_CLARIFY) in changed
    assert changed.count("\n") == prompt.count("\n"), "more than the one step changed"


def test_without_clarifying_refuses_a_prompt_without_the_step_it_replaces() -> None:
    with pytest.raises(ValueError, match="TRIAGE"):
        prompts.without_clarifying("You are an orchestrator.")
