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
guard (which may too), the reading of tool calls written as text (``modelcalls/text_tool_calls.py``), the
model-call heartbeat, the server's call slots, retries and usage metering (once per real call), and
the system prompt's date (filled per call, so a graph compiled yesterday tells today's run today's date).
After the chain come the agent's own middleware, then prompt caching, and context compaction innermost,
so it measures the final system prompt and tools of each request. The orchestrator's report gate wraps
``submit_report`` and sends a draft with citation problems back once before it is delivered. The guards
work inside the model and tool calls rather than as graph nodes, so they add no graph steps (each step
costs a checkpoint), and run as one layer since langchain adds a span per layer and call; ten concurrent
runs share one event loop.

``build_graph`` is the roster: the parts read once per configuration (``read_parts``), then each agent
from its builder (``orchestrator_agent``, ``research_subagent``, ``extract_subagent``,
``coding_subagent``), each on the shared stack (``_agent``: the guard chain, the agent's own middleware,
caching, compaction). An agent whose model gets the assist (``assist/``: ``model_assist`` decided per slot
model, ``assist_for``) also gets its parts: the research sub-agent its first-step and next-step lines, each
agent the worked examples of its nudges and bounces and the one-item list repair of its text tool calls, the
triage router its wider rule; without it, none of that text reaches the model. Each agent's prompt is its
role's prompt joined with the sections of the features the run can use, each owned by its feature
(``role_prompt``). This module is the one place that reads
``ResearchConfig`` for a middleware or a builder: each is handed only its own knobs (the Knobs section at the
end), which its constructor checks; a feature's builders get its settings sub-model
(``settings.part(SearchSettings)``, ``settings/features.py``), never the whole configuration (besides
``settings/``, only this module and the entry points name it: ``tests/test_layers.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from threading import Lock
from typing import Any

from deepagents.backends import StateBackend
from deepagents.graph import DeepAgentState
from deepagents.middleware.subagents import CompiledSubAgent, SubAgentMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from . import prompts
from .assist import (
    FirstStepMiddleware,
    NextStepMiddleware,
    UnitFirstCall,
    asks_for_research_or_comparison,
    decide_assist,
    delegation_example,
    one_item_list,
    page_example,
)
from .corpora.catalog import Catalog, catalog_for
from .corpora.prompt import corpora_section
from .delivery import (
    ClarificationMiddleware,
    CompletionMiddleware,
    ReportGateMiddleware,
    ReportMiddleware,
    TurnEndMiddleware,
)
from .delivery.chart_offer import ChartOfferMiddleware
from .delivery.follow_up import follow_up_section
from .delivery.reader import ReaderShape, ReaderShapeMiddleware
from .delivery.steer import SteeringMiddleware
from .delivery.unit_cap import UnitCapMiddleware
from .domain.assist import AssistDecision
from .domain.names import Role, ToolName
from .domain.plan_answer import PlanRules
from .domain.reader import style_unit_cap
from .domain.search import PAPER_BACKENDS
from .domain.secrets import register_secrets
from .embeddings import embedder_for
from .extensions import load_extensions, skills_filesystem
from .extensions.skills import SkillCatalog, load_skills, skill_helpers
from .guards import (
    BudgetLimits,
    BudgetMiddleware,
    GuardChainMiddleware,
    LoopGuardMiddleware,
    RunawayOutputMiddleware,
    StepLimitMiddleware,
    effective_recursion_limit,
)
from .handover import FindingsGateMiddleware, HandOverMiddleware
from .handover.progress import ProgressLinesMiddleware
from .handover.script import ScriptGateMiddleware
from .knowledge import build_knowledge_tools
from .knowledge.prompt import knowledge_section
from .lifecycle import (
    ContainedCallsMiddleware,
    RunClosingMiddleware,
    RunLedgerMiddleware,
    RunLifecycle,
    RunOpeningMiddleware,
    TriageRouterMiddleware,
)
from .lifecycle.claim_judge import ModelClaimJudge, claim_judge, judge_timeout
from .lifecycle.model_errors import ModelEndpoint
from .lifecycle.no_tool_calls import NoToolCallsMiddleware
from .lifecycle.offer import OfferMiddleware, Roster, RunOffer
from .lifecycle.triage import asks_for_research
from .mcp.calls import CallLimits, instrument
from .mcp.listing import Listing, OpeningStatuses, list_tools, listings_digest, unique_names
from .mcp.prompt import mcp_section
from .modelcalls.caching import PromptCachingMiddleware
from .modelcalls.compaction import CompactionLimits, ContextCompactionMiddleware, ModelFactory
from .modelcalls.concurrency import ModelConcurrencyMiddleware
from .modelcalls.heartbeat import ModelCallHeartbeatMiddleware
from .modelcalls.metering import UsageMeteringMiddleware, side_call_meter
from .modelcalls.models import chat_model
from .modelcalls.output_cap import OutputCapMiddleware
from .modelcalls.prompt_date import PromptDateMiddleware
from .modelcalls.retry import ModelCallRetryMiddleware
from .modelcalls.text_tool_calls import TextToolCallsMiddleware
from .modelcalls.tracing import inline_untraced_spans
from .plan_review import PlanReviewMiddleware, estimate_plan, plan_review_section
from .planning import PlanningMiddleware
from .run import current_run
from .sandbox.backend import SandboxBackend
from .sandbox.connector import SandboxConnector, sandbox_connector
from .sandbox.prompt import code_execution_section, skill_helpers_section
from .sandbox.tools import sandbox_tools
from .settings import (
    BudgetSettings,
    CorporaSettings,
    EmbeddingSettings,
    ExtensionSettings,
    KnowledgeSettings,
    McpSettings,
    ModelSettings,
    ModelSpec,
    ReaderSettings,
    ResearchConfig,
    ResultSettings,
    SandboxSettings,
    SearchSettings,
    Slot,
    load_env_file,
    publish_run_settings,
)
from .tasks.middleware import TaskMiddleware
from .tasks.prompt import tasks_section
from .tasks.translation import WordingTranslator
from .tools import ClassifiedToolErrorsMiddleware, build_corpus_tools, build_web_fetch_tool, build_web_search_tool
from .tools.results import ResultLimits
from .tools.start import ResearchSources, start_section
from .tools.web_prompt import no_web_section, web_section

logger = logging.getLogger(__name__)

# The server imports this module before any run: settings a langgraph.json ``env`` would carry reach
# every server this way, Aegra included, which ignores that key.
load_env_file()
# Before any run: langchain wraps each middleware layer's calls in LangSmith spans, traced or not.
inline_untraced_spans()

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

_EXTRACT_DESCRIPTION = (
    "Reads one offloaded result file in the sandbox with shell commands and returns JSON findings with verbatim "
    "quotes. Brief: the file's path, the question, and the source to cite."
)
_CODING_DESCRIPTION = (
    "Writes and runs one Python script in the sandbox (or fixes one, given its code and the exact error) and answers "
    "STATUS / SCRIPT / OUTPUT / NOTES with the script's real output. Brief: the goal, the input files, the figures to produce."
)
# The model slot of each agent's role (the tier names the model of each slot).
_SLOTS: dict[Role, Slot] = {
    Role.ORCHESTRATOR: "research",
    Role.RESEARCH_SUBAGENT: "subagent",
    Role.EXTRACT_SUBAGENT: "utility",
    Role.CODING_SUBAGENT: "coding",
}

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
    corpora = await catalog_for(settings.part(CorporaSettings))
    key = settings.cache_key() + corpora.digest()
    listings: tuple[Listing, ...] = ()
    if settings.mcp_servers:
        listings = await list_tools(settings.mcp_servers, ttl=settings.mcp_tools_ttl, reserved_names=set(ToolName))
        key += listings_digest(listings)
        run_id = ((config or {}).get("configurable") or {}).get("run_id")
        if run_id:
            current_run(config).attachments.attach(OpeningStatuses([listing.status() for listing in listings]))
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
    """The orchestrator and its sub-agents for one configuration: who is in the graph, and with what.

    Every agent gets the deployment's custom tools; research sub-agents also get the tools of the ``mcp``
    listings and of the searchable ``corpora``, and both roles' prompts name the servers and corpora they
    can use. With ``web_search`` off the web tools are left out altogether (``web_fetch`` too), and the
    prompts say the run has no web access. The extract and coding sub-agents exist only with a sandbox."""
    orchestrator, _ = _build(settings, mcp=mcp, corpora=corpora)
    # Published as the assistant's config_schema, so clients (Studio too) can discover the per-run settings.
    return publish_run_settings(orchestrator).with_config(_step_limit(settings))


def roster_of(settings: ResearchConfig, *, mcp: Sequence[Listing] = (), corpora: Catalog | None = None) -> Roster:
    """Each agent's tools and prompts for one configuration, as ``build_graph`` builds them (the prompt budget
    reads what each role is shown from it)."""
    return _build(settings, mcp=mcp, corpora=corpora)[1].roster


def _build(
    settings: ResearchConfig, *, mcp: Sequence[Listing], corpora: Catalog | None
) -> tuple[CompiledStateGraph, GraphParts]:
    parts = read_parts(settings, mcp=mcp, corpora=corpora or Catalog())
    helpers = [extract_subagent(settings, parts), coding_subagent(settings, parts)] if parts.sandbox else []
    research = research_subagent(settings, parts, helpers=helpers)
    return orchestrator_agent(settings, parts, subagents=[research, *helpers]), parts


# --- What the agents are built from -------------------------------------------------------------------


@dataclass(frozen=True)
class RunFeatures:
    """What the graph's agents can use, as the features' prompt sections read it: the web, the searchable
    ``corpora`` (empty when the research sub-agents have no corpus tools), the knowledge base, the skills,
    the MCP ``listings`` and the deployment's guidance on them, the sandbox, the deployment's domain prompt."""

    web_search: bool
    corpora: Catalog
    knowledge: bool
    skills: SkillCatalog
    mcp: tuple[Listing, ...]
    mcp_prompt: str
    sandbox: SandboxConnector | None
    domain_prompt: str
    # The run's search backends that find papers (arXiv, PubMed, OpenAlex), for the web section.
    paper_sources: tuple[str, ...] = ()
    # The user reviews the plan before its units start (plan_review).
    plan_review: bool = False

    @property
    def sources(self) -> ResearchSources:
        """The corpora and the MCP servers with tools, as a brief may name them (``tools/start.py``)."""
        return ResearchSources(
            corpora=tuple((entry.spec.name, entry.spec.display_title) for entry in self.corpora.ready()),
            mcp=tuple(
                (listing.server.label, tuple(t.name for t in listing.tools)) for listing in self.mcp if listing.tools
            ),
        )


@dataclass(frozen=True)
class GraphParts:
    """What one configuration's agents are built from, read once per build: the deployment's custom tools
    (every agent's), the research sub-agents' own tools, the sandbox and its backend (when attached), what
    the prompts say the run can use, and what reading it all found wrong (reported by every run)."""

    custom_tools: tuple[BaseTool, ...]
    research_tools: tuple[BaseTool, ...]
    sandbox: SandboxConnector | None
    sandbox_backend: SandboxBackend | None
    features: RunFeatures
    build_warnings: tuple[str, ...]
    # Filled as each agent is built: its registered tools, whose part a run is offered ``run_start`` lists.
    roster: Roster = field(default_factory=Roster)


def read_parts(settings: ResearchConfig, *, mcp: Sequence[Listing], corpora: Catalog) -> GraphParts:
    """Skills, skill helpers and custom tools are read here, once per distinct configuration, never per run."""
    skills = SkillCatalog(Path(settings.skills_dir)) if settings.problems else load_skills(Path(settings.skills_dir))
    sandbox = (
        None
        if settings.problems
        else sandbox_connector(
            settings.part(SandboxSettings), skill_helpers(skills), max_output_chars=settings.max_result_chars
        )
    )
    results = ResultLimits.of(settings.part(ResultSettings), sandbox)
    extensions = load_extensions(
        settings.part(ExtensionSettings), results, cfg=settings, skills=skills, refused=bool(settings.problems)
    )
    custom_tools = tuple(extensions.custom_tools.tools)
    # Listing already kept MCP names clear of the built-in tools; custom tools are known only now.
    mcp = unique_names(mcp, {*ToolName, *(tool.name for tool in custom_tools)})
    web_tools = (
        build_web_search_tool(settings.part(SearchSettings)),
        build_web_fetch_tool(settings.part(SearchSettings), results=results) if settings.web_search else None,
    )
    embedder = embedder_for(settings.part(EmbeddingSettings))
    corpus_tools = build_corpus_tools(corpora, default_k=settings.corpus_max_results, embedder=embedder)
    limits = mcp_call_limits(settings.part(McpSettings), results)
    mcp_tools = [instrument(tool, listing.server, limits) for listing in mcp for tool in listing.tools]
    knowledge_tools = build_knowledge_tools(settings.part(KnowledgeSettings), embedder=embedder)
    return GraphParts(
        custom_tools=custom_tools,
        research_tools=(*(t for t in web_tools if t is not None), *corpus_tools, *knowledge_tools, *mcp_tools),
        sandbox=sandbox,
        sandbox_backend=SandboxBackend(sandbox) if sandbox else None,
        features=RunFeatures(
            web_search=settings.web_search,
            corpora=corpora if corpus_tools else Catalog(),
            knowledge=bool(knowledge_tools),
            skills=extensions.skills,
            mcp=tuple(mcp),
            mcp_prompt=settings.mcp_prompt,
            sandbox=sandbox,
            domain_prompt=settings.domain_prompt,
            plan_review=settings.plan_review,
            paper_sources=tuple(b for b in settings.search_backends if b in PAPER_BACKENDS)
            if settings.web_search
            else (),
        ),
        build_warnings=(*extensions.warnings, *corpora.warnings),
    )


# --- The agents ----------------------------------------------------------------------------------------


def orchestrator_agent(
    settings: ResearchConfig, parts: GraphParts, *, subagents: Sequence[CompiledSubAgent]
) -> CompiledStateGraph:
    """The orchestrator: it plans, hands units to ``subagents`` through ``task``, and delivers the report."""
    assisted = assist_for(settings, Role.ORCHESTRATOR).on
    roles = [Role.ORCHESTRATOR, *(Role(agent["name"]) for agent in subagents)]
    return _agent(
        settings,
        parts,
        Role.ORCHESTRATOR,
        tools=parts.custom_tools,
        outside=[
            *run_lifecycle(
                settings,
                build_warnings=parts.build_warnings,
                roster=parts.roster,
                assist={role.value: assist_for(settings, role) for role in roles},
            ),
            # Outside the guards: the call after a delivery is answered with the deliverable, never made.
            TurnEndMiddleware(public_url=settings.public_url),
            # A SIMPLE turn is answered in the orchestrator's first model call, before any guard or prompt.
            *([triage_router(settings)] if settings.triage else []),
            # Inside the router: a turn it sent to research must call a tool, or end with an honest error.
            NoToolCallsMiddleware(first_call=delegation_example if assisted else None),
            # Outside the guards: the call that starts an approved plan's units is answered with them, never made.
            # In every graph, offered only with plan_review on: a resume without config still finds its handler.
            plan_review(settings, subagents=subagents),
        ],
        gate=CompletionMiddleware(),
        own=[
            ClassifiedToolErrorsMiddleware(role=Role.ORCHESTRATOR),
            # Outside the hand-over: a unit beyond what the report's style allows never starts.
            *unit_cap(settings),
            HandOverMiddleware(models_by_role=_models_by_role(settings, subagents)),
            # Inside the hand-over: once a chart is called for (a series in the findings, or the user asked for one),
            # how to write one, after the findings JSON; never in the system prompt.
            *([ChartOfferMiddleware(max_charts=settings.max_charts)] if settings.max_charts else []),
            # The user's steering messages so far, read at each of the orchestrator's model calls.
            SteeringMiddleware(role=Role.ORCHESTRATOR),
            # The report's language (auto: the question's, told at the run's first call), length and outline.
            ReaderShapeMiddleware(role=Role.ORCHESTRATOR, shape=reader_shape(settings)),
            # Off (``clarify: false``), a caller that cannot answer: request_clarification is not even offered.
            *([ClarificationMiddleware()] if settings.clarify else []),
            PlanningMiddleware(system_prompt=_TODOS_PROMPT, tool_description=_TODOS_DESCRIPTION),
            SubAgentMiddleware(backend=StateBackend(), subagents=list(subagents), task_description=_TASK_DESCRIPTION),
            ReportMiddleware(),
            ReportGateMiddleware(
                judge=report_judge(settings),
                judge_timeout=judge_timeout(settings.request_timeout),
                embedder=embedder_for(settings.part(EmbeddingSettings)),
                max_charts=settings.max_charts,
                outline=settings.report_outline,
                style=settings.report_style,
            ),
            # Inside the report gate: the "what changed" section is appended to the report it let through.
            # The patch for dangling tool calls runs in the lifecycle's opening hook, not as a node of its own.
            TaskMiddleware(translator=digest_translator(settings), public_url=settings.public_url),
        ],
        state_schema=DeepAgentState,
    )


def research_subagent(
    settings: ResearchConfig, parts: GraphParts, *, helpers: Sequence[CompiledSubAgent]
) -> CompiledSubAgent:
    """A research sub-agent: it gathers one unit with the research tools, and may hand jobs on its data to
    the ``helpers`` (the extract and coding sub-agents) through a ``task`` of its own."""
    delegation: list[AgentMiddleware] = []
    if helpers:
        delegation = [
            HandOverMiddleware(models_by_role=_models_by_role(settings, helpers), nested=True),
            SubAgentMiddleware(
                backend=StateBackend(), subagents=list(helpers), task_description=_NESTED_TASK_DESCRIPTION
            ),
        ]
    role = Role.RESEARCH_SUBAGENT
    web_fetch = any(t.name == ToolName.WEB_FETCH for t in parts.research_tools)
    assisted = assist_for(settings, role).on
    agent = _agent(
        settings,
        parts,
        role,
        tools=[*parts.research_tools, *parts.custom_tools],
        # Outermost: a client streaming sub-agents sees progress lines; every layer inside reads the full texts.
        outside=[ProgressLinesMiddleware()],
        gate=findings_gate(settings, role, parts.features.sources),
        own=[
            # The assist's "Start with a `web_search` call." after the brief, on the unit's first model call, and
            # the next step at the end of search results, pages and read_file's web-address error.
            *(
                [
                    FirstStepMiddleware(role=role, sources=parts.features.sources),
                    NextStepMiddleware(role=role, web_fetch=web_fetch),
                ]
                if assisted
                else []
            ),
            # No PatchToolCallsMiddleware: the task tool starts every sub-agent on one fresh brief, which
            # never holds a dangling tool call, and the patch would cost a graph step per sub-agent run.
            ClassifiedToolErrorsMiddleware(role=role),
            # The languages to search in, when the report is not in English.
            ReaderShapeMiddleware(role=Role.RESEARCH_SUBAGENT, shape=reader_shape(settings)),
            # read_file on /skills/ only, and the skill events; nothing when there are no skills.
            *skills_filesystem(parts.features.skills, web_fetch=web_fetch),
            # task for the extract and coding sub-agents, when a sandbox is attached.
            *delegation,
        ],
        # A sub-agent is never resumed midway, so its steps are not checkpointed: inherited from the
        # orchestrator, every step would store the whole growing conversation for the thread's lifetime.
        checkpointer=False,
    )
    return CompiledSubAgent(
        name=Role.RESEARCH_SUBAGENT.value,
        description=_research_description(parts.features),
        # Its own step budget: without one it would inherit the orchestrator's whole limit per task.
        runnable=agent.with_config(_step_limit(settings)),
    )


def extract_subagent(settings: ResearchConfig, parts: GraphParts) -> CompiledSubAgent:
    """The extract sub-agent, on the sandbox: the utility model, only execute of the sandbox's tools, and
    the findings gate."""
    return _sandbox_subagent(
        settings,
        parts,
        Role.EXTRACT_SUBAGENT,
        _EXTRACT_DESCRIPTION,
        gate=findings_gate(settings, Role.EXTRACT_SUBAGENT),
    )


def coding_subagent(settings: ResearchConfig, parts: GraphParts) -> CompiledSubAgent:
    """The coding sub-agent, on the sandbox: the tier's coding model, the file and execute tools, and the
    script gate."""
    assert parts.sandbox is not None, "the coding sub-agent exists only with a sandbox"
    gate = ScriptGateMiddleware(role=Role.CODING_SUBAGENT, sandbox=parts.sandbox)
    return _sandbox_subagent(settings, parts, Role.CODING_SUBAGENT, _CODING_DESCRIPTION, gate=gate)


def _sandbox_subagent(
    settings: ResearchConfig, parts: GraphParts, role: Role, description: str, *, gate: AgentMiddleware
) -> CompiledSubAgent:
    """A sub-agent on the run's sandbox. It also gets the deployment's custom tools, like every other agent
    (the per-role trimming in ``sandbox/tools.py`` applies to the sandbox's own tools only)."""
    assert parts.sandbox_backend is not None, f"the {role} exists only with a sandbox"
    agent = _agent(
        settings,
        parts,
        role,
        tools=parts.custom_tools,
        gate=gate,
        own=[ClassifiedToolErrorsMiddleware(role=role), *sandbox_tools(parts.sandbox_backend, role)],
        # Like a research sub-agent: never resumed midway, so its steps are not checkpointed.
        checkpointer=False,
    )
    return CompiledSubAgent(name=role.value, description=description, runnable=agent.with_config(_step_limit(settings)))


def _agent(
    settings: ResearchConfig,
    parts: GraphParts,
    role: Role,
    *,
    tools: Sequence[BaseTool],
    gate: AgentMiddleware,
    own: Sequence[AgentMiddleware],
    outside: Sequence[AgentMiddleware] = (),
    **options: Any,
) -> CompiledStateGraph:
    """One agent on the model of its role's slot with the shared stack, outermost first: ``outside`` (the
    orchestrator's lifecycle), the run's offer (the tools and prompt of what the run can use), the guard
    chain around ``gate``, the agent's ``own`` middleware, then prompt caching and context compaction
    innermost, so it measures the final system prompt and tools of each request. The agent's registered
    tools go on the ``parts``' roster. ``options`` go to ``create_agent`` as they are."""
    slot = _SLOTS[role]
    offer = OfferMiddleware(role=role, prompt_for=partial(agent_prompt, settings, role, parts.features))
    inside = [*own, *_caching(settings, role), context_compaction(settings, role, slot)]
    middleware = [
        *outside,
        offer,
        _guards(settings, role, settings.tier.slot(slot), [*outside, offer, *inside], gate=gate),
        *inside,
    ]
    registered = [t for m in middleware for t in getattr(m, "tools", ()) if t.name not in getattr(m, "withheld", ())]
    parts.roster.add(role, [*tools, *registered], offer.prompt_for)
    return create_agent(
        chat_model(settings.part(ModelSettings), settings.tier.slot(slot), role),
        tools=list(tools),
        system_prompt=agent_prompt(settings, role, parts.features),
        middleware=middleware,
        # Plain strings: the agent's name lands on its messages, and a checkpoint must hold no enum of ours
        # (LangGraph warns on deserializing one, and LANGGRAPH_STRICT_MSGPACK refuses it).
        name=role.value,
        **options,
    )


def _models_by_role(settings: ResearchConfig, subagents: Sequence[CompiledSubAgent]) -> dict[str, str]:
    """The model of each of ``subagents``, for the hand-over's events."""
    return {Role(agent["name"]): settings.tier.slot(_SLOTS[Role(agent["name"])]).slug for agent in subagents}


# --- The shared middleware stack -----------------------------------------------------------------------


def _guards(
    settings: ResearchConfig, role: str, spec: ModelSpec, others: Sequence[AgentMiddleware], *, gate: AgentMiddleware
) -> GuardChainMiddleware:
    """Step limit, budget and loop guards, the agent's answer gate, runaway guard, text tool calls, heartbeat,
    model-call slots, retries, metering, the output cap and the prompt's date of one agent, outermost first; ``others`` is the agent's other middleware, whose
    graph steps the step limit keeps in reserve. The gate judges the answer the runaway guard let through,
    and may ask the model again, so it sits outside the per-call guards."""
    return GuardChainMiddleware(
        [
            StepLimitMiddleware(role=role, agent_middleware=others),
            BudgetMiddleware(budget_limits(settings.part(BudgetSettings)), role=role),
            LoopGuardMiddleware(role=role),
            gate,
            RunawayOutputMiddleware(role=role),
            TextToolCallsMiddleware(
                role=role,
                enabled=settings.text_tool_calls,
                repair=one_item_list if assist_for(settings, Role(role)).on else None,
            ),
            ModelCallHeartbeatMiddleware(role=role, model=spec.slug),
            ModelConcurrencyMiddleware(
                role=role,
                server=settings.base_url,
                limit=settings.model_max_concurrency,
                run_limit=settings.run_model_max_concurrency,
            ),
            ModelCallRetryMiddleware(
                role=role,
                model=spec.slug,
                max_retries=settings.max_retries,
                max_wait_s=settings.model_rate_limit_max_wait,
            ),
            UsageMeteringMiddleware(role=role, spec=spec),
            OutputCapMiddleware(
                role=role, context_window=spec.context_window, max_output_tokens=settings.max_output_tokens
            ),
            PromptDateMiddleware(role=role),
        ],
        role=role,
    )


def context_compaction(settings: ResearchConfig, role: str, slot: Slot) -> ContextCompactionMiddleware:
    """The compaction of the agent of ``role``, on the model of ``slot``; its summarizer is metered as a side call."""
    return ContextCompactionMiddleware(
        role=role,
        limits=compaction_limits(settings, slot),
        model_factory=models_for(settings),
        on_compacted=lambda usage, summarized, kept: usage.count_compaction(summarized),
        on_model_response=side_call_meter(Role.COMPACTION, settings.tier.compaction),
    )


def _caching(settings: ResearchConfig, role: str) -> list[AgentMiddleware]:
    return [PromptCachingMiddleware(role=role)] if settings.caches_prompts else []


def run_lifecycle(
    settings: ResearchConfig,
    build_warnings: Sequence[str] = (),
    roster: Roster | None = None,
    assist: dict[str, AssistDecision] | None = None,
) -> RunLifecycle:
    """The orchestrator's lifecycle: its opening reports the settings' warnings, then the build's
    ``build_warnings``, and announces the part of the ``roster`` each run is offered and each agent's ``assist``."""
    return RunLifecycle(
        contained=ContainedCallsMiddleware(endpoint=model_endpoint(settings)),
        opening=RunOpeningMiddleware(
            max_runs_per_user=settings.max_runs_per_user,
            max_question_chars=settings.max_question_chars,
            warnings=(*settings.warnings, *build_warnings),
            problems=settings.problems,
            knowledge_base=settings.knowledge_base,
            remember_findings=settings.remember_findings,
            knowledge_dataset=settings.knowledge_dataset,
            roster=roster,
            assist=assist,
        ),
        ledger=RunLedgerMiddleware(),
        closing=RunClosingMiddleware(
            budget=budget_limits(settings.part(BudgetSettings)),
            recursion_limit=effective_recursion_limit(settings.recursion_limit),
            remember_findings=settings.remember_findings,
            knowledge_dataset=settings.knowledge_dataset,
            public_url=settings.public_url,
            max_charts=settings.max_charts,
        ),
    )


def unit_cap(settings: ResearchConfig) -> list[UnitCapMiddleware]:
    """The cap on a run's research units its report's style sets (none for ``standard``)."""
    cap = style_unit_cap(settings.report_style)
    return [] if cap is None else [UnitCapMiddleware(max_units=cap, style=settings.report_style)]


def plan_max_units(settings: ResearchConfig) -> int:
    """A plan's most units: ``plan_max_units`` (0: no limit), and no more than the report's style allows."""
    caps = [cap for cap in (settings.plan_max_units, style_unit_cap(settings.report_style)) if cap]
    return min(caps, default=0)


def plan_review(settings: ResearchConfig, *, subagents: Sequence[CompiledSubAgent]) -> PlanReviewMiddleware:
    """The plan review, its estimate from the tier's prices and the run's budgets, a plan's units bounded to
    ``plan_max_units`` (and the report style's cap) and the ``subagents`` the orchestrator can start; offered
    with ``plan_review`` on."""
    return PlanReviewMiddleware(
        offered=settings.plan_review,
        timeout_s=settings.plan_review_timeout,
        rules=PlanRules(max_units=plan_max_units(settings), subagent_types=tuple(agent["name"] for agent in subagents)),
        estimate=partial(
            estimate_plan, tier=settings.tier, unit_tokens=settings.plan_unit_tokens, limits=budget_limits(settings)
        ),
    )


def triage_router(settings: ResearchConfig) -> TriageRouterMiddleware:
    """The pre-triage router, its calls metered as ``triage`` side calls on the tier's research model; with that
    model's assist on, tables and comparisons go to research without asking it."""
    assisted = assist_for(settings, Role.ORCHESTRATOR).on
    return TriageRouterMiddleware(
        model_factory=models_for(settings),
        on_model_response=side_call_meter(Role.TRIAGE, settings.tier.research),
        research_request=asks_for_research_or_comparison if assisted else asks_for_research,
        reader=reader_shape(settings),
    )


def findings_gate(
    settings: ResearchConfig, role: Role, sources: ResearchSources = ResearchSources()
) -> FindingsGateMiddleware:
    """The findings gate of ``role``; with its assist on, its bounces end on worked examples (``sources``: what a
    brief may name, for the call that starts a unit's research)."""
    if not assist_for(settings, role).on:
        return FindingsGateMiddleware(role=role)
    return FindingsGateMiddleware(role=role, first_call=UnitFirstCall(sources), page_example=page_example)


def _step_limit(settings: ResearchConfig) -> RunnableConfig:
    """The ``recursion_limit`` of every agent's runnable: each sub-agent has its own, never the orchestrator's whole one."""
    return {"recursion_limit": effective_recursion_limit(settings.recursion_limit)}


# --- Prompts -------------------------------------------------------------------------------------------


_ROLE_PROMPTS = {
    Role.ORCHESTRATOR: prompts.Prompt.ORCHESTRATOR,
    Role.RESEARCH_SUBAGENT: prompts.Prompt.RESEARCH_SUBAGENT,
    Role.EXTRACT_SUBAGENT: prompts.Prompt.EXTRACT_SUBAGENT,
    Role.CODING_SUBAGENT: prompts.Prompt.CODING_SUBAGENT,
}
# The roles whose prompt ends with the deployment's domain prompt: those that plan or gather the research.
_DOMAIN_ROLES = (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT)


def role_prompt(role: Role, features: RunFeatures, offer: RunOffer | None = None) -> str:
    """The system prompt of ``role`` for a run's ``offer`` (by default: every run-time capability the graph
    has): its own prompt, then every feature's section for it, in this order; each feature's section says
    nothing to a role it does not concern, or when the run lacks it."""
    sandbox = features.sandbox
    tasked = offer.task if offer is not None else True
    knowledge = features.knowledge and (offer.knowledge if offer is not None else True)
    follow_up = offer.follow_up if offer is not None else True
    sources = features.sources
    sections = (
        follow_up_section(role) if follow_up else "",
        start_section(
            role, knowledge=knowledge, corpora=bool(sources.corpora), mcp=bool(sources.mcp), web=features.web_search
        ),
        web_section(role, web_search=features.web_search, paper_sources=features.paper_sources),
        corpora_section(role, features.corpora, web_search=features.web_search),
        no_web_section(role, web_search=features.web_search),
        tasks_section(role, enabled=tasked),
        plan_review_section(role, enabled=features.plan_review),
        knowledge_section(role, enabled=knowledge),
        features.skills.prompt_section(role),
        mcp_section(role, features.mcp, deployment_prompt=features.mcp_prompt),
        code_execution_section(role, sandbox=sandbox is not None),
        skill_helpers_section(role, sandbox.helper_paths if sandbox is not None else ()),
    )
    domain_prompt = features.domain_prompt if role in _DOMAIN_ROLES else ""
    return prompts.assemble(_ROLE_PROMPTS[role], sections, domain_prompt=domain_prompt)


def agent_prompt(settings: ResearchConfig, role: Role, features: RunFeatures, offer: RunOffer | None = None) -> str:
    """``role_prompt`` for these settings: with ``clarify`` off the orchestrator's step on asking says to
    proceed on stated assumptions."""
    prompt = role_prompt(role, features, offer)
    return prompts.without_clarifying(prompt) if role is Role.ORCHESTRATOR and not settings.clarify else prompt


def _research_description(features: RunFeatures) -> str:
    """What the orchestrator's ``task`` says a research sub-agent does: where it looks."""
    where = [
        *(["the web (search, read pages)"] if features.web_search else []),
        *(["the local corpora"] if features.corpora.ready() else []),
    ]
    return (
        f"Researches one unit{' in ' + ' and '.join(where) if where else ''} and returns JSON findings with quotes "
        "and source URLs."
    )


# --- Knobs: the one place that reads the run's settings for a middleware ------------------------------


def reader_shape(settings: ReaderSettings) -> ReaderShape:
    return ReaderShape(language=settings.report_language, style=settings.report_style, outline=settings.report_outline)


def assist_for(settings: ResearchConfig, role: Role) -> AssistDecision:
    """Whether the agent of ``role`` gets the assist, on the model of its slot (``assist/switch.py``)."""
    slot = _SLOTS[role]
    return decide_assist(
        settings.model_assist,
        model=settings.tier.slot(slot).slug,
        declared_small=slot in settings.small_model_slots,
        local_profile=settings.profile == "local",
    )


def budget_limits(settings: BudgetSettings) -> BudgetLimits:
    return BudgetLimits(
        max_tool_calls=settings.max_tool_calls,
        max_total_tokens=settings.max_total_tokens,
        max_run_seconds=settings.max_run_seconds,
        max_cost_usd=settings.max_cost_usd,
    )


def mcp_call_limits(settings: McpSettings, results: ResultLimits) -> CallLimits:
    return CallLimits(
        max_concurrency=settings.mcp_max_concurrency,
        max_wait_s=settings.mcp_rate_limit_max_wait,
        call_timeout_s=settings.mcp_call_timeout,
        results=results,
    )


def model_endpoint(settings: ResearchConfig) -> ModelEndpoint:
    return ModelEndpoint(
        base_url=settings.base_url, model_tier=settings.model_tier, request_timeout=settings.request_timeout
    )


def compaction_limits(settings: ResearchConfig, slot: Slot) -> CompactionLimits:
    """When the agent on the model of ``slot`` compacts, and how much its summarizer may read."""
    return CompactionLimits(
        compaction_tokens=settings.compaction_tokens,
        context_window=settings.tier.slot(slot).context_window,
        summarizer_context_window=settings.tier.compaction.context_window,
    )


def models_for(settings: ResearchConfig) -> ModelFactory:
    """Builds the model of a slot for a role on the run's endpoint, tier and model options."""
    options, tier = settings.part(ModelSettings), settings.tier

    def model(slot: Slot, role: Role) -> BaseChatModel:
        return chat_model(options, tier.slot(slot), role)

    return model


def digest_translator(settings: ResearchConfig) -> WordingTranslator:
    """The digest's wording in the report's language, on the tier's utility model, metered as ``translation``."""
    utility = settings.tier.utility
    return WordingTranslator(
        model_factory=models_for(settings),
        model=utility.slug,
        on_model_response=side_call_meter(Role.TRANSLATION, utility),
    )


def report_judge(settings: ResearchConfig) -> ModelClaimJudge | None:
    """The report gate's claim judge on the tier's utility model, when the run judges claims."""
    return claim_judge(
        enabled=settings.judges_claims, utility=settings.tier.utility, model_factory=models_for(settings)
    )
