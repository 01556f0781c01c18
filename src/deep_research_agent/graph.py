"""``make_graph(config)``: the LangGraph entry point (graph id ``deep_research_agent``).

The dev server calls the factory on every run and every state read, on its event loop. So the factory
only resolves the run's settings and looks up a compiled graph in a small cache keyed by everything that
shapes it; a graph is compiled once per distinct configuration and reused by every run that shares it.
Compiled graphs hold no per-run state: that lives in each run's checkpoint and run ledger.

The agent is composed from deepagents' parts (``SubAgentMiddleware`` and its ``task`` tool, the patch for
dangling tool calls) around langchain's ``create_agent``, rather than through ``create_deep_agent``:
that helper always gives the orchestrator file tools and a general-purpose sub-agent, which this product
must not have, and switching them off there means a process-global harness profile.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from threading import Lock
from typing import Any

from deepagents.backends import StateBackend
from deepagents.graph import DeepAgentState
from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware
from deepagents.middleware.subagents import CompiledSubAgent, SubAgentMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import TodoListMiddleware
from langgraph.graph.state import CompiledStateGraph

from . import prompts
from .config import ResearchConfig
from .events import ORCHESTRATOR, register_secrets
from .middleware.clarification import ClarificationMiddleware
from .middleware.lifecycle import RunLifecycleMiddleware
from .middleware.metering import UsageMeteringMiddleware
from .middleware.subagent_lifecycle import SubagentLifecycleMiddleware
from .middleware.tool_errors import ClassifiedToolErrorsMiddleware
from .models import chat_model
from .report import ReportMiddleware
from .tools.fetch import build_web_fetch_tool
from .tools.search import build_web_search_tool

logger = logging.getLogger(__name__)

GRAPH_ID = "deep_research_agent"
RESEARCH_SUBAGENT = "research-subagent"
_CACHE_SIZE = 32

_TASK_DESCRIPTION = (
    "Hand one research unit to a sub-agent, which works on its own and returns its findings.\n"
    "Put several task calls in one turn to run units in parallel. The brief must be self-contained: "
    "the sub-agent sees nothing else.\n\nAvailable sub-agents:\n{available_agents}"
)
_TODOS_PROMPT = "Keep the plan current with `write_todos`: one todo per research unit, plus the report."
_TODOS_DESCRIPTION = (
    "Write the research plan as a todo list (replaces the previous list). "
    "Each todo has content and a status: pending, in_progress or completed."
)

_graphs: OrderedDict[str, CompiledStateGraph] = OrderedDict()
_graphs_lock = Lock()


def make_graph(config: dict[str, Any] | None = None) -> CompiledStateGraph:
    """Return the compiled agent for this run's settings, building it only on a cache miss."""
    settings = ResearchConfig.resolve(config)
    register_secrets(settings.secret_values())
    key = settings.cache_key()
    with _graphs_lock:
        graph = _graphs.get(key)
        if graph is not None:
            _graphs.move_to_end(key)
            return graph
    graph = build_graph(settings)
    with _graphs_lock:
        _graphs[key] = graph
        while len(_graphs) > _CACHE_SIZE:
            _graphs.popitem(last=False)
    return graph


def build_graph(settings: ResearchConfig) -> CompiledStateGraph:
    """Assemble the orchestrator and its sub-agents for one configuration."""
    tier = settings.tier
    research_tools = [t for t in (build_web_search_tool(settings), build_web_fetch_tool(settings)) if t is not None]
    research_subagent = create_agent(
        chat_model(settings, "subagent"),
        tools=research_tools,
        system_prompt=prompts.render(prompts.RESEARCH_SUBAGENT, domain_prompt=settings.domain_prompt),
        middleware=[
            UsageMeteringMiddleware(role=RESEARCH_SUBAGENT, spec=tier.subagent),
            ClassifiedToolErrorsMiddleware(role=RESEARCH_SUBAGENT),
            PatchToolCallsMiddleware(),
        ],
        name=RESEARCH_SUBAGENT,
    )
    subagents: list[CompiledSubAgent] = [
        {
            "name": RESEARCH_SUBAGENT,
            "description": "Researches one unit on the web (search, read pages) and returns JSON findings with quotes and URLs.",
            "runnable": research_subagent,
        }
    ]
    orchestrator = create_agent(
        chat_model(settings, "research"),
        tools=[],
        system_prompt=prompts.render(prompts.ORCHESTRATOR, domain_prompt=settings.domain_prompt),
        middleware=[
            RunLifecycleMiddleware(settings),
            UsageMeteringMiddleware(role=ORCHESTRATOR, spec=tier.research),
            ClassifiedToolErrorsMiddleware(role=ORCHESTRATOR),
            SubagentLifecycleMiddleware(models_by_role={RESEARCH_SUBAGENT: tier.subagent.slug}),
            ClarificationMiddleware(),
            TodoListMiddleware(system_prompt=_TODOS_PROMPT, tool_description=_TODOS_DESCRIPTION),
            SubAgentMiddleware(backend=StateBackend(), subagents=subagents, task_description=_TASK_DESCRIPTION),
            ReportMiddleware(),
            PatchToolCallsMiddleware(),
        ],
        state_schema=DeepAgentState,
        name=ORCHESTRATOR,
    )
    return orchestrator.with_config({"recursion_limit": settings.recursion_limit})
