"""What one run is offered: the tools each agent sees and the prompt text that explains them, decided once per run.

A compiled graph serves every run of one configuration, but three of its capabilities depend on the run,
not on the configuration: the decision tools (``record_decision``, ``search_decisions``) serve only a run
that belongs to a named task, the knowledge-base tools (``remember``, ``query``) only a run whose user's
dataset has entries, or that remembers (``remember_findings``), and the orchestrator's follow-up guidance
only a turn on a thread that already holds an answer. The graph registers those tools, so any run can call
them; each agent's ``OfferMiddleware`` then shows the model only what the run was offered.

Contract:
- ``decide_offer`` (the lifecycle calls it once, before ``run_start``) reads ``configurable.task`` (a name
  that is not usable offers no task), takes ``follow_up`` from the lifecycle (the thread holds an earlier
  answer) and, with the knowledge base on and remembering off, whether the dataset holds an entry (a store that cannot answer offers the tools, so a failure never hides the
  user's entries). The ``RunOffer`` is the run's attachment and kept in its ledger, so a run resumed in
  another process is offered the same;
- ``Roster`` is every agent's registered tools, recorded once per graph build, and which of them need a
  run-time capability; ``Roster.offered(offer)`` is each role's tool list for the run, as ``run_start``
  announces it;
- ``OfferMiddleware`` (outermost but the orchestrator's lifecycle, so the system prompt it sets is the
  one every inner middleware extends and dates) gives each model call the tools and the system prompt of
  the run's offer; a call outside a run that was offered nothing (a unit test) passes unchanged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.store.base import BaseStore

from ..domain.names import ToolName
from ..domain.per_role import PerRoleMiddleware
from ..knowledge import KnowledgeBase, knowledge_namespace
from ..run import NoRunError, Run, current_run, kept_in_ledger, run_user
from ..tasks.decisions import RECORD_DECISION, SEARCH_DECISIONS
from ..tasks.store import TaskNameError, task_of

logger = logging.getLogger(__name__)


@kept_in_ledger
@dataclass
class RunOffer:
    """A run's attachment: the run-time capabilities it was offered (``task``, ``knowledge``, ``follow_up``)."""

    LEDGER_KEY: ClassVar[str] = "offer"
    task: bool = False
    knowledge: bool = False
    follow_up: bool = False
    decided: bool = False

    def snapshot(self) -> dict[str, bool]:
        return {"task": self.task, "knowledge": self.knowledge, "follow_up": self.follow_up}

    def restore(self, value: Any) -> None:
        self.task, self.knowledge = bool(value.get("task")), bool(value.get("knowledge"))
        self.follow_up = bool(value.get("follow_up"))
        self.decided = True


# The tools that need a run-time capability, by the RunOffer flag that offers them.
TASK_TOOLS = frozenset({RECORD_DECISION, SEARCH_DECISIONS})
KNOWLEDGE_TOOLS = frozenset({ToolName.REMEMBER.value, ToolName.QUERY.value})


def withheld_tools(offer: RunOffer) -> frozenset[str]:
    """The tools of the run-time capabilities ``offer`` lacks."""
    return (frozenset() if offer.task else TASK_TOOLS) | (frozenset() if offer.knowledge else KNOWLEDGE_TOOLS)


@dataclass
class Roster:
    """Each agent's registered tools and its system prompt for an offer, by role, as the graph build recorded them."""

    tools: dict[str, tuple[BaseTool, ...]] = field(default_factory=dict)
    prompts: dict[str, Callable[[RunOffer], str]] = field(default_factory=dict)

    def add(self, role: str, tools: Sequence[BaseTool], prompt_for: Callable[[RunOffer], str]) -> None:
        self.tools[role], self.prompts[role] = tuple(tools), prompt_for

    def offered(self, offer: RunOffer) -> dict[str, list[str]]:
        """Each role's tool names for a run offered ``offer``."""
        withheld = withheld_tools(offer)
        return {role: [t.name for t in tools if t.name not in withheld] for role, tools in self.tools.items()}

    def shown_chars(self, offer: RunOffer) -> dict[str, tuple[int, int]]:
        """What each role's model is shown on every call of a run offered ``offer``, in characters: its system
        prompt, and its tools' schemas as the OpenAI wire format serializes them."""
        withheld = withheld_tools(offer)
        return {
            role: (
                len(self.prompts[role](offer)),
                len(json.dumps([convert_to_openai_tool(t) for t in tools if t.name not in withheld])),
            )
            for role, tools in self.tools.items()
        }


async def decide_offer(
    store: BaseStore | None,
    run: Run,
    config: dict[str, Any],
    *,
    knowledge_base: bool,
    remember_findings: bool,
    dataset: str,
    follow_up: bool,
) -> RunOffer:
    """Decide the run's offer once (see the contract) and attach it; a decided offer is returned as it is."""
    offer = run.attachments.setdefault(RunOffer, RunOffer)
    if offer.decided:
        return offer
    try:
        offer.task = task_of(config) is not None
    except TaskNameError:
        offer.task = False  # the task middleware warns about the name; the run goes on untasked
    offer.knowledge = knowledge_base and (remember_findings or await _has_entries(store, config, dataset))
    offer.follow_up = follow_up
    offer.decided = True
    return offer


async def _has_entries(store: BaseStore | None, config: dict[str, Any], dataset: str) -> bool:
    if store is None:
        return False
    namespace = knowledge_namespace(run_user(config), dataset)
    try:
        return bool(await KnowledgeBase(store, namespace).store.asearch(namespace, limit=1))
    except Exception:  # noqa: BLE001 - an unreadable dataset may still hold the user's entries: offer them
        logger.warning("could not tell whether knowledge dataset %r has entries; offering its tools", dataset)
        return True


class OfferMiddleware(PerRoleMiddleware):
    """Shows one agent's model the tools and the system prompt of the run's offer."""

    label = "Offer"

    def __init__(self, *, role: str, prompt_for: Callable[[RunOffer], str]) -> None:
        """``prompt_for``: the agent's system prompt for an offer (its role's prompt with the sections of
        what the offer holds)."""
        super().__init__(role=role)
        self.prompt_for = prompt_for
        self._prompts: dict[tuple[bool, ...], str] = {}

    def _prompt(self, offer: RunOffer) -> str:
        key = tuple(offer.snapshot().values())
        if key not in self._prompts:
            self._prompts[key] = self.prompt_for(offer)
        return self._prompts[key]

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        offer = _run_offer()
        if offer is None:
            return await handler(request)
        withheld = withheld_tools(offer)
        tools = [tool for tool in request.tools if getattr(tool, "name", None) not in withheld]
        return await handler(request.override(tools=tools, system_message=SystemMessage(content=self._prompt(offer))))


def _run_offer() -> RunOffer | None:
    try:
        offer = current_run().attachments.get(RunOffer)
    except (RuntimeError, NoRunError):
        return None
    return offer if offer is not None and offer.decided else None
