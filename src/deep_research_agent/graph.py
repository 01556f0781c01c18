"""``make_graph(config)``: the LangGraph entry point (graph id ``deep_research_agent``).

The dev server calls the factory on every run and every state read, on its event loop. So the factory
only resolves the run's settings and looks up a compiled graph in a small cache keyed by everything that
shapes it; a graph is compiled once per distinct configuration and reused by every run that shares it.
Compiled graphs hold no per-run state: that lives in each run's checkpoint and run ledger. The factory is
async so that a cache miss builds in a worker thread: a build reads the skills folder and imports the
custom tools, file I/O the event loop must not wait on (the dev server's blocking-call detector refuses it).

The agent is composed from deepagents' parts (``SubAgentMiddleware`` and its ``task`` tool, the patch for
dangling tool calls) around langchain's ``create_agent``, rather than through ``create_deep_agent``:
that helper always gives the orchestrator file tools and a general-purpose sub-agent, which this product
must not have, and switching them off there means a process-global harness profile.

Every agent, the orchestrator and each sub-agent alike, carries the same guards as one middleware layer
(``GuardChainMiddleware``), in this order, outermost first: the step limit, the run budget (its clock
covers everything inside), the loop guard, the agent's answer gate (the sub-agent's findings gate, the
orchestrator's completion nudges; either may ask the model again in the same step), the runaway-output
guard (which may too), the model-call heartbeat, retries and usage metering (once per real call), and
the system prompt's date (filled per call, so a graph compiled yesterday tells today's run today's date).
After the chain come the agent's own middleware, then prompt caching, and context compaction innermost,
so it measures the final system prompt and tools of each request. The orchestrator's report gate wraps
``submit_report`` and sends a draft with citation problems back once before it is delivered. The guards
work inside the model and tool calls rather than as graph nodes, so they add no graph steps (each step
costs a checkpoint), and run as one layer since langchain adds a span per layer and call; ten concurrent
runs share one event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from threading import Lock
from typing import Any

from deepagents.backends import StateBackend
from deepagents.graph import DeepAgentState
from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware
from deepagents.middleware.subagents import CompiledSubAgent, SubAgentMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from . import prompts
from .corpora.catalog import Catalog, catalog_for
from .delivery import (
    ClarificationMiddleware,
    CompletionMiddleware,
    ReportGateMiddleware,
    ReportMiddleware,
    TurnEndMiddleware,
)
from .domain.names import Role, ToolName
from .domain.secrets import register_secrets
from .extensions import load_extensions, skills_filesystem
from .extensions.skills import SkillCatalog, load_skills, skill_helpers
from .guards import (
    BudgetMiddleware,
    GuardChainMiddleware,
    LoopGuardMiddleware,
    RunawayOutputMiddleware,
    StepLimitMiddleware,
    effective_recursion_limit,
)
from .handover import FindingsGateMiddleware, HandOverMiddleware
from .handover.script import ScriptGateMiddleware
from .knowledge import build_knowledge_tools
from .lifecycle import RunLifecycleMiddleware, TriageRouterMiddleware
from .lifecycle.claim_judge import claim_judge, judge_timeout
from .mcp.calls import CallLimits, instrument, source_label
from .mcp.listing import Listing, list_tools, listings_digest, unique_names
from .modelcalls.caching import PromptCachingMiddleware
from .modelcalls.compaction import ContextCompactionMiddleware
from .modelcalls.metering import ModelCallHeartbeatMiddleware, UsageMeteringMiddleware, side_call_meter
from .modelcalls.models import chat_model
from .modelcalls.prompt_date import PromptDateMiddleware
from .modelcalls.retry import ModelCallRetryMiddleware
from .planning import PlanningMiddleware
from .run import current_run
from .sandbox.backend import SandboxBackend
from .sandbox.connector import SandboxConnector, sandbox_connector
from .sandbox.tools import sandbox_tools
from .settings import ModelSpec, ResearchConfig, Slot, load_env_file, publish_run_settings
from .tasks.middleware import TaskMiddleware
from .tools import ClassifiedToolErrorsMiddleware, build_corpus_tools, build_web_fetch_tool, build_web_search_tool
from .tools.results import ResultLimits

logger = logging.getLogger(__name__)

# The server imports this module before any run: settings a langgraph.json ``env`` would carry reach
# every server this way, Aegra included, which ignores that key.
load_env_file()

GRAPH_ID = "deep_research_agent"
_CACHE_SIZE = 32

_TASK_DESCRIPTION = (
    "Hand one research unit to a sub-agent, which works on its own and returns its findings.\n"
    "Put several task calls in one turn to run units in parallel. The brief must be self-contained: "
    "the sub-agent sees nothing else.\n\nAvailable sub-agents:\n{available_agents}"
)
_NESTED_TASK_DESCRIPTION = (
    "Hand a job on this unit's data to a helper sub-agent, which works on its own in the sandbox and returns its "
    "answer. The brief must be self-contained: the helper sees nothing else.\n\nAvailable sub-agents:\n{available_agents}"
)
_TODOS_PROMPT = "Keep the plan current with `write_todos`: one todo per research unit, plus the report."
_TODOS_DESCRIPTION = (
    "Write the research plan as a todo list (replaces the previous list). "
    "Each todo has content and a status: pending, in_progress or completed."
)

_graphs: OrderedDict[str, CompiledStateGraph] = OrderedDict()
_graphs_lock = Lock()
_building: dict[str, asyncio.Future[CompiledStateGraph]] = {}


async def make_graph(config: dict[str, Any] | None = None) -> CompiledStateGraph:
    """Return the compiled agent for this run's settings and MCP tools, building it only on a cache miss, off
    the event loop (skills and custom tools are read from disk then), once however many runs miss at once.

    The run's MCP servers are listed first (from the listing cache while it is fresh), because their tools
    shape the graph; what each connection gave is kept for the run to announce after ``run_start``. The
    run's corpora are read the same way (their names, titles and sizes are in the prompts), from a catalog
    cached for a few seconds.
    """
    settings = ResearchConfig.resolve(config)
    register_secrets(settings.secret_values())
    corpora = await catalog_for(settings)
    key = settings.cache_key() + corpora.digest()
    listings: tuple[Listing, ...] = ()
    if settings.mcp_servers:
        listings = await list_tools(settings.mcp_servers, ttl=settings.mcp_tools_ttl, reserved_names=set(ToolName))
        key += listings_digest(listings)
        run_id = ((config or {}).get("configurable") or {}).get("run_id")
        if run_id:
            current_run(config).opening_statuses = [listing.status() for listing in listings]
    with _graphs_lock:
        graph = _graphs.get(key)
        if graph is not None:
            _graphs.move_to_end(key)
            return graph
    # Runs that start together on a cold cache share one build instead of compiling it once each.
    build = _building.get(key)
    if build is None or build.get_loop() is not asyncio.get_running_loop():
        build = _building[key] = asyncio.ensure_future(_build_and_cache(key, settings, listings, corpora))
        build.add_done_callback(lambda done: _building.pop(key, None) if _building.get(key) is done else None)
    return await asyncio.shield(build)


async def _build_and_cache(
    key: str, settings: ResearchConfig, listings: tuple[Listing, ...], corpora: Catalog
) -> CompiledStateGraph:
    graph = await asyncio.to_thread(build_graph, settings, mcp=listings, corpora=corpora)
    with _graphs_lock:
        _graphs[key] = graph
        while len(_graphs) > _CACHE_SIZE:
            _graphs.popitem(last=False)
    return graph


def build_graph(
    settings: ResearchConfig, *, mcp: Sequence[Listing] = (), corpora: Catalog | None = None
) -> CompiledStateGraph:
    """Assemble the orchestrator and its sub-agents for one configuration; every agent gets the
    deployment's custom tools, research sub-agents also get the tools of the ``mcp`` listings and of the
    searchable ``corpora``, and both roles' prompts name the servers and corpora they can use. With
    ``web_search`` off the web tools are left out altogether (``web_fetch`` too), and the prompts say the
    run has no web access."""
    tier = settings.tier
    # Skills, skill helpers and custom tools are read here, once per distinct configuration, never per run.
    skills = SkillCatalog(Path(settings.skills_dir)) if settings.problems else load_skills(Path(settings.skills_dir))
    sandbox = sandbox_connector(settings, skill_helpers(skills))
    results = ResultLimits.of(settings, sandbox)
    extensions = load_extensions(settings, results, skills=skills)
    custom_tools = list(extensions.custom_tools.tools)
    # Listing already kept MCP names clear of the built-in tools; custom tools are known only now.
    mcp = unique_names(mcp, {*ToolName, *(tool.name for tool in custom_tools)})
    corpora = corpora or Catalog()
    web_tools = (
        build_web_search_tool(settings),
        build_web_fetch_tool(settings, results=results) if settings.web_search else None,
    )
    corpus_tools = build_corpus_tools(corpora, default_k=settings.corpus_max_results)
    limits = CallLimits(
        max_concurrency=settings.mcp_max_concurrency,
        max_wait_s=settings.mcp_rate_limit_max_wait,
        call_timeout_s=settings.mcp_call_timeout,
        results=results,
    )
    mcp_tools = [instrument(tool, listing.server, limits) for listing in mcp for tool in listing.tools]
    knowledge_tools = build_knowledge_tools(settings)
    research_tools = [*(t for t in web_tools if t is not None), *corpus_tools, *knowledge_tools, *mcp_tools]
    knowledge_prompt = prompts.template(prompts.Prompt.KNOWLEDGE) if knowledge_tools else ""
    orchestrator_mcp, subagent_mcp = _mcp_prompts(settings, mcp)
    code_prompt = prompts.template(prompts.Prompt.CODE_EXECUTION if sandbox else prompts.Prompt.NO_CODE_EXECUTION)
    sandbox_roles = _sandbox_roles(settings, sandbox, custom_tools) if sandbox else []
    sandbox_models = (
        {Role.EXTRACT_SUBAGENT: tier.utility.slug, Role.CODING_SUBAGENT: tier.coding.slug} if sandbox else {}
    )
    models_by_role = {Role.RESEARCH_SUBAGENT: tier.subagent.slug, **sandbox_models}
    delegation: list[AgentMiddleware] = []
    if sandbox_roles:
        delegation = [
            HandOverMiddleware(models_by_role=sandbox_models, nested=True),
            SubAgentMiddleware(
                backend=StateBackend(), subagents=sandbox_roles, task_description=_NESTED_TASK_DESCRIPTION
            ),
        ]
    orchestrator_sources, subagent_sources = _source_prompts(settings, corpora if corpus_tools else Catalog())
    subagent_middleware = [
        # No PatchToolCallsMiddleware: the task tool starts every sub-agent on one fresh brief, which
        # never holds a dangling tool call, and the patch would cost a graph step per sub-agent run.
        ClassifiedToolErrorsMiddleware(role=Role.RESEARCH_SUBAGENT),
        # read_file on /skills/ only, and the skill events; nothing when there are no skills.
        *skills_filesystem(extensions.skills),
        # task for the extract and coding sub-agents, when a sandbox is attached.
        *delegation,
        *_caching(settings, Role.RESEARCH_SUBAGENT),
        _compaction(settings, Role.RESEARCH_SUBAGENT, "subagent"),
    ]
    research_subagent = create_agent(
        chat_model(settings, "subagent", Role.RESEARCH_SUBAGENT),
        tools=[*research_tools, *custom_tools],
        system_prompt=prompts.render(
            prompts.Prompt.RESEARCH_SUBAGENT,
            domain_prompt=settings.domain_prompt,
            extra="\n\n".join(
                p
                for p in (
                    subagent_sources,
                    knowledge_prompt,
                    extensions.skills.subagent_section(),
                    subagent_mcp,
                    code_prompt,
                )
                if p
            ),
        ),
        middleware=[
            _guards(
                settings,
                Role.RESEARCH_SUBAGENT,
                tier.subagent,
                subagent_middleware,
                gate=FindingsGateMiddleware(role=Role.RESEARCH_SUBAGENT),
            ),
            *subagent_middleware,
        ],
        # Plain strings: the agent's name lands on its messages, and a checkpoint must hold no enum of ours
        # (LangGraph warns on deserializing one, and LANGGRAPH_STRICT_MSGPACK refuses it).
        name=Role.RESEARCH_SUBAGENT.value,
        # A sub-agent is never resumed midway, so its steps are not checkpointed: inherited from the
        # orchestrator, every step would store the whole growing conversation for the thread's lifetime.
        checkpointer=False,
    )
    subagents: list[CompiledSubAgent] = [
        {
            "name": Role.RESEARCH_SUBAGENT.value,
            "description": _subagent_description(settings, bool(corpus_tools)),
            # Its own step budget: without one it would inherit the orchestrator's whole limit per task.
            "runnable": research_subagent.with_config({"recursion_limit": effective_recursion_limit(settings)}),
        },
        *sandbox_roles,
    ]
    outside_guards = [
        RunLifecycleMiddleware(settings, build_warnings=(*extensions.warnings, *corpora.warnings)),
        # Outside the guards: the call after a delivery is answered with the deliverable, never made.
        TurnEndMiddleware(),
        # A SIMPLE turn is answered in the orchestrator's first model call, before any guard or prompt.
        TriageRouterMiddleware(settings=settings, on_model_response=side_call_meter(Role.TRIAGE, tier.research)),
    ]
    inside_guards = [
        ClassifiedToolErrorsMiddleware(role=Role.ORCHESTRATOR),
        HandOverMiddleware(models_by_role=models_by_role),
        ClarificationMiddleware(),
        PlanningMiddleware(system_prompt=_TODOS_PROMPT, tool_description=_TODOS_DESCRIPTION),
        SubAgentMiddleware(backend=StateBackend(), subagents=subagents, task_description=_TASK_DESCRIPTION),
        ReportMiddleware(),
        ReportGateMiddleware(judge=claim_judge(settings), judge_timeout=judge_timeout(settings)),
        # Inside the report gate: the "what changed" section is appended to the report it let through.
        TaskMiddleware(),
        PatchToolCallsMiddleware(),
        *_caching(settings, Role.ORCHESTRATOR),
        # Innermost, so it measures the final system prompt and tools of each request.
        _compaction(settings, Role.ORCHESTRATOR, "research"),
    ]
    orchestrator = create_agent(
        chat_model(settings, "research", Role.ORCHESTRATOR),
        tools=custom_tools,
        system_prompt=prompts.render(
            prompts.Prompt.ORCHESTRATOR,
            domain_prompt=settings.domain_prompt,
            extra="\n\n".join(
                part
                for part in (
                    prompts.template(prompts.Prompt.FOLLOW_UP),
                    orchestrator_sources,
                    prompts.template(prompts.Prompt.TASKS),
                    extensions.skills.orchestrator_section(),
                    orchestrator_mcp,
                    code_prompt,
                )
                if part
            ),
        ),
        middleware=[
            *outside_guards,
            _guards(
                settings,
                Role.ORCHESTRATOR,
                tier.research,
                [*outside_guards, *inside_guards],
                gate=CompletionMiddleware(),
            ),
            *inside_guards,
        ],
        state_schema=DeepAgentState,
        name=Role.ORCHESTRATOR.value,
    )
    # Published as the assistant's config_schema, so clients (Studio too) can discover the per-run settings.
    return publish_run_settings(orchestrator).with_config({"recursion_limit": effective_recursion_limit(settings)})


def _guards(
    settings: ResearchConfig, role: str, spec: ModelSpec, others: Sequence[AgentMiddleware], *, gate: AgentMiddleware
) -> GuardChainMiddleware:
    """Step limit, budget and loop guards, the agent's answer gate, runaway guard, heartbeat, retries, metering
    and the prompt's date of one agent, outermost first; ``others`` is the agent's other middleware, whose
    graph steps the step limit keeps in reserve. The gate judges the answer the runaway guard let through,
    and may ask the model again, so it sits outside the per-call guards."""
    return GuardChainMiddleware(
        [
            StepLimitMiddleware(role=role, agent_middleware=others),
            BudgetMiddleware(settings, role=role),
            LoopGuardMiddleware(role=role),
            gate,
            RunawayOutputMiddleware(role=role),
            ModelCallHeartbeatMiddleware(role=role, model=spec.slug),
            ModelCallRetryMiddleware(
                role=role,
                model=spec.slug,
                max_retries=settings.max_retries,
                max_wait_s=settings.model_rate_limit_max_wait,
            ),
            UsageMeteringMiddleware(role=role, spec=spec),
            PromptDateMiddleware(role=role),
        ],
        role=role,
    )


_EXTRACT_DESCRIPTION = (
    "Reads one offloaded result file in the sandbox with shell commands and returns JSON findings with verbatim "
    "quotes. Brief: the file's path, the question, and the source to cite."
)
_CODING_DESCRIPTION = (
    "Writes and runs one Python script in the sandbox (or fixes one, given its code and the exact error) and answers "
    "STATUS / SCRIPT / OUTPUT / NOTES with the script's real output. Brief: the goal, the input files, the figures to produce."
)


def _sandbox_roles(
    settings: ResearchConfig, sandbox: SandboxConnector, custom_tools: Sequence[BaseTool]
) -> list[CompiledSubAgent]:
    """The extract and coding sub-agents, both on the run's sandbox: the extractor on the utility model with
    only execute of the sandbox's tools and the findings gate, the coder on the tier's coding model with the file and execute tools
    and the script gate. Both also get the deployment's ``custom_tools``, like every other agent (the
    per-role trimming in ``sandbox/tools.py`` applies to the sandbox's own tools only)."""
    backend = SandboxBackend(sandbox)
    helpers = "\n".join(f"- `{path}`" for path in sandbox.helper_paths)
    helper_section = (
        f"## Skill helpers\nThese modules are in the sandbox; a script may import them:\n{helpers}" if helpers else ""
    )
    extract = _sandbox_role(
        settings, backend, Role.EXTRACT_SUBAGENT, "utility", prompts.render(prompts.Prompt.EXTRACT_SUBAGENT),
        gate=FindingsGateMiddleware(role=Role.EXTRACT_SUBAGENT), tools=custom_tools,
    )  # fmt: skip
    coding = _sandbox_role(
        settings, backend, Role.CODING_SUBAGENT, "coding", prompts.render(prompts.Prompt.CODING_SUBAGENT, extra=helper_section),
        gate=ScriptGateMiddleware(role=Role.CODING_SUBAGENT, sandbox=sandbox), tools=custom_tools,
    )  # fmt: skip
    return [
        CompiledSubAgent(name=Role.EXTRACT_SUBAGENT.value, description=_EXTRACT_DESCRIPTION, runnable=extract),
        CompiledSubAgent(name=Role.CODING_SUBAGENT.value, description=_CODING_DESCRIPTION, runnable=coding),
    ]


def _sandbox_role(
    settings: ResearchConfig,
    backend: SandboxBackend,
    role: Role,
    slot: Slot,
    system_prompt: str,
    *,
    gate: AgentMiddleware,
    tools: Sequence[BaseTool],
) -> Any:
    middleware = [
        ClassifiedToolErrorsMiddleware(role=role),
        *sandbox_tools(backend, role),
        *_caching(settings, role),
        _compaction(settings, role, slot),
    ]
    agent = create_agent(
        chat_model(settings, slot, role),
        tools=list(tools),
        system_prompt=system_prompt,
        middleware=[_guards(settings, role, settings.tier.slot(slot), middleware, gate=gate), *middleware],
        name=role.value,  # a plain string, as for the research sub-agent: checkpoints hold no enum
        # Like a research sub-agent: never resumed midway, so its steps are not checkpointed.
        checkpointer=False,
    )
    return agent.with_config({"recursion_limit": effective_recursion_limit(settings)})


def _mcp_prompts(settings: ResearchConfig, mcp: Sequence[Listing]) -> tuple[str, str]:
    """The orchestrator's and the research sub-agent's guidance on the MCP servers that offer tools, each
    followed by the deployment's ``mcp_prompt``; empty when no server does."""
    ready = [listing.server for listing in mcp if listing.tools]
    if not ready:
        return "", ""
    deployment = settings.mcp_prompt.strip()
    servers = ", ".join(f"`{server.label}` (cite as `{source_label(server)}`)" for server in ready)
    orchestrator = (
        f"Research sub-agents can also query these MCP servers: {servers}. A finding from one cites that "
        "source; list it in the report's Sources like a page."
    )
    subagent = prompts.template(prompts.Prompt.MCP_TOOLS).replace("{servers}", servers)
    if deployment:
        return f"{orchestrator}\n{deployment}", f"{subagent}\n{deployment}"
    return orchestrator, subagent


def _source_prompts(settings: ResearchConfig, corpora: Catalog) -> tuple[str, str]:
    """The orchestrator's and the research sub-agent's guidance on where to look: the web (or that there
    is none) and the run's corpora, each listed with what it holds and its size."""
    ready = corpora.ready()
    orchestrator: list[str] = []
    subagent: list[str] = [prompts.template(prompts.Prompt.WEB_RESEARCH)] if settings.web_search else []
    if ready:
        listing = "\n".join(f"- {entry.describe()}" for entry in ready)
        and_web = ", and whether the web is needed too" if settings.web_search else ""
        orchestrator.append(
            prompts.template(prompts.Prompt.CORPORA_ORCHESTRATOR)
            .replace("{corpora}", listing)
            .replace("{and_web}", and_web)
        )
        names = ", ".join(f"`{entry.spec.name}` ({entry.spec.display_title})" for entry in ready)
        subagent.append(prompts.template(prompts.Prompt.CORPORA_SUBAGENT).replace("{corpora}", names))
    if not settings.web_search:
        orchestrator.append(prompts.template(prompts.Prompt.NO_WEB))
        subagent.append(prompts.template(prompts.Prompt.NO_WEB))
    return "\n\n".join(orchestrator), "\n\n".join(subagent)


def _subagent_description(settings: ResearchConfig, corpora: bool) -> str:
    where = [
        *(["the web (search, read pages)"] if settings.web_search else []),
        *(["the local corpora"] if corpora else []),
    ]
    return (
        f"Researches one unit{' in ' + ' and '.join(where) if where else ''} and returns JSON findings with quotes "
        "and source URLs."
    )


def _compaction(settings: ResearchConfig, role: str, slot: Slot) -> ContextCompactionMiddleware:
    return ContextCompactionMiddleware(
        role=role,
        slot=slot,
        settings=settings,
        on_compacted=lambda summarized, kept: current_run().usage.count_compaction(summarized),
        on_model_response=side_call_meter(Role.COMPACTION, settings.tier.compaction),
    )


def _caching(settings: ResearchConfig, role: str) -> list[AgentMiddleware]:
    return [PromptCachingMiddleware(role=role)] if settings.prompt_caching else []
