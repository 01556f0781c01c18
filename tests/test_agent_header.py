"""Every model request names its caller's role in the ``X-DRA-Agent`` header (``models.AGENT_HEADER``).

``chat_model`` builds each model for one role and puts the role in the header of every request it sends;
the graph builds each agent's model for that agent's role, and the side calls build theirs for their own:
``triage`` for the router's verdict, ``direct-answer`` for the reply to a SIMPLE turn, ``compaction`` for
the summarizer. The scripted model (``testkit/scripted_model.py``) answers each agent by this header.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from deep_research_agent import graph, prompts
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import Role
from deep_research_agent.lifecycle.triage import TriageRouterMiddleware
from deep_research_agent.modelcalls.compaction import ContextCompactionMiddleware
from deep_research_agent.modelcalls.models import AGENT_HEADER, chat_model
from deep_research_agent.settings import MODEL_TIERS, SLOTS, ModelSettings, ModelSpec, ResearchConfig, Slot
from testkit.recording_model import RecordingChatModel
from testkit.scripted_model import ScriptedModelServer, agent, scenario, turn

pytestmark = pytest.mark.anyio


class ModelsByRole:
    """A ``model_factory`` that records the (slot, role) of every model asked for and hands out one per role."""

    def __init__(self, replies: dict[Role, list[str]] | None = None) -> None:
        self.asked: list[tuple[Slot, Role]] = []
        self.models = {role: RecordingChatModel(replies=list(answers)) for role, answers in (replies or {}).items()}

    def __call__(self, slot: Slot, role: Role) -> BaseChatModel:
        self.asked.append((slot, role))
        return self.models.setdefault(role, RecordingChatModel())


@pytest.mark.parametrize("role", list(Role))
def test_a_model_sends_its_role_in_the_agent_header_of_every_request(scripted: ScriptedModelServer, role: Role):
    scripted.set_scenario(scenario(agent(role, turn(f"answered as {role}"))))
    settings = ResearchConfig.resolve(
        {}, environ={"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": "sk-test-0000"}
    )

    model = chat_model(settings.part(ModelSettings), settings.tier.research, role)
    reply = model.invoke("Who is asking?")

    assert model.default_headers == {AGENT_HEADER: role.value}
    assert reply.text == f"answered as {role}"
    assert [r["agent"] for r in scripted.requests()] == [role.value]


# A model name of its own per slot, so a recorded model tells which slot it was built for.
SLOT_MODELS = {f"DRA_MODEL_{slot.upper()}": f"model-of-{slot}" for slot in SLOTS}


def test_the_graph_builds_each_agent_model_for_that_agents_role():
    settings = ResearchConfig.resolve(
        {},
        environ={
            "OPENAI_API_KEY": "sk-test-0000",
            "LLM_SANDBOX_URL": "http://127.0.0.1:9",
            "LLM_SANDBOX_TOKEN": "t" * 24,
            **SLOT_MODELS,
        },
    )
    asked: list[tuple[str, Role]] = []

    def recording_chat_model(options: ModelSettings, spec: ModelSpec, role: Role) -> Any:
        asked.append((spec.slug, role))
        return chat_model(options, spec, role)

    with mock.patch.object(graph, "chat_model", recording_chat_model):
        graph.build_graph(settings)

    assert sorted(asked) == sorted(
        [
            ("model-of-research", Role.ORCHESTRATOR),
            ("model-of-subagent", Role.RESEARCH_SUBAGENT),
            ("model-of-utility", Role.EXTRACT_SUBAGENT),
            ("model-of-coding", Role.CODING_SUBAGENT),
        ]
    )


async def test_the_router_asks_for_its_verdict_as_triage_and_answers_as_direct_answer(run):
    models = ModelsByRole({Role.TRIAGE: ["SIMPLE"], Role.DIRECT_ANSWER: ["Sofia is the capital of Bulgaria."]})
    router = TriageRouterMiddleware(model_factory=models)
    orchestrator = create_agent(RecordingChatModel(replies=["never"]), tools=[], middleware=[router])

    state = await orchestrator.ainvoke({"messages": [HumanMessage("What is the capital of Bulgaria?")]})

    assert state["messages"][-1].text == "Sofia is the capital of Bulgaria."
    assert sorted(models.asked) == sorted([("research", Role.TRIAGE), ("research", Role.DIRECT_ANSWER)])
    [verdict_call] = models.models[Role.TRIAGE].calls
    [answer_call] = models.models[Role.DIRECT_ANSWER].calls
    assert verdict_call.system == prompts.template(prompts.Prompt.TRIAGE)
    assert answer_call.system == prompts.render(prompts.Prompt.DIRECT_ANSWER)


def test_the_summarizer_is_built_for_the_compaction_role_whichever_agent_it_compacts():
    models = ModelsByRole()
    compaction = ContextCompactionMiddleware(
        role=Role.RESEARCH_SUBAGENT,
        limits=graph.compaction_limits(ResearchConfig.resolve({}, environ={}), "subagent"),
        model_factory=models,
    )

    assert compaction.summarizer is models.models[Role.COMPACTION]
    assert models.asked == [("compaction", Role.COMPACTION)]


def test_the_graph_builds_the_side_models_on_the_runs_settings_for_their_roles():
    settings = ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test-0000", **SLOT_MODELS})
    asked: list[tuple[str, Role]] = []

    def recording_chat_model(given: ModelSettings, spec: ModelSpec, role: Role) -> Any:
        assert given == settings.part(ModelSettings)
        asked.append((spec.slug, role))
        return chat_model(given, spec, role)

    # The router and the compaction build their models on first use: they are read while the recorder stands in.
    with mock.patch.object(graph, "chat_model", recording_chat_model):
        router = graph.triage_router(settings)
        compaction = graph.context_compaction(settings, Role.RESEARCH_SUBAGENT, "subagent")
        models = (router.verdict_model, router.answer_model, compaction.summarizer)
    assert [model.default_headers for model in models] == [
        {AGENT_HEADER: Role.TRIAGE.value},
        {AGENT_HEADER: Role.DIRECT_ANSWER.value},
        {AGENT_HEADER: Role.COMPACTION.value},
    ]
    assert asked == [
        ("model-of-research", Role.TRIAGE),
        ("model-of-research", Role.DIRECT_ANSWER),
        ("model-of-compaction", Role.COMPACTION),
    ]


@pytest.mark.parametrize("knob", ["temperature", "request_timeout", "max_output_tokens"])
def test_a_model_is_refused_a_negative_call_option_where_it_is_built(knob: str):
    options = ModelSettings().model_copy(update={knob: -1})
    with pytest.raises(KnobError, match=f"chat_model: {knob} must be a finite number of 0 or more"):
        chat_model(options, MODEL_TIERS["extra-low"].research, Role.ORCHESTRATOR)
