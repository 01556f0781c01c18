"""The report's reader shape reaches the agents: its language, outline and length, as prompt sections.

Contract (``ReaderShapeMiddleware``, one per agent role that needs it):
- the orchestrator's system prompt gets, at each model call, the sections of the options the run sets away
  from their defaults: the report language (``report_language.md``), the length and depth
  (``report_style.md``; ``standard`` adds nothing) and the outline (``report_outline.md``); a research
  sub-agent's gets the search languages (``search_language.md``) when the report language is not English;
- ``auto`` is the language of the user's latest message (of all their messages when that one is too short to
  tell), told locally (``documents/language.py``) on the run's first model call and kept for the run
  (``RunLanguage``), so every agent and every later call read the same; an English question, or one no
  language can be told of, adds nothing: a run with the defaults is prompted exactly as before;
- with nothing to add, the request passes unchanged.

Why at the model call and not in the compiled prompt: ``auto`` depends on the question, which the graph
(built once per configuration) never sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, SystemMessage

from .. import prompts
from ..documents.language import detect_language
from ..domain.conversation import is_user_turn, latest_user_text
from ..domain.names import Role
from ..domain.per_role import PerRoleMiddleware
from ..domain.reader import AUTO_LANGUAGE, ENGLISH, STYLE_TARGETS, ReportStyle, RunLanguage, language_name
from ..run import Run, run_hook

_DEPTH = {
    ReportStyle.BRIEF: "Keep to what answers the question: a short summary and a few tight sections; no background the "
    "user did not ask for.",
    ReportStyle.DETAILED: "Go deep: background, each angle with its evidence, disagreements between sources, "
    "limitations and what remains open; a table where figures compare.",
}


@dataclass(frozen=True)
class ReaderShape:
    """What the reader asked of the report (``ReaderSettings``, checked when the settings resolved)."""

    language: str = AUTO_LANGUAGE
    style: str = ReportStyle.STANDARD.value
    outline: tuple[str, ...] = ()


def _format_range(low: int, high: int) -> str:
    return f"{low:,}-{high:,}"


def orchestrator_sections(shape: ReaderShape, language: str | None) -> list[str]:
    """The orchestrator's sections for this shape and the run's language (None: the model's choice)."""
    sections = []
    if language is not None:
        sections.append(prompts.fill(prompts.Prompt.REPORT_LANGUAGE, language=language_name(language)))
    style = ReportStyle(shape.style)
    if style is not ReportStyle.STANDARD:
        target = STYLE_TARGETS[style]
        sections.append(
            prompts.fill(
                prompts.Prompt.REPORT_STYLE,
                style=style.value,
                units=_format_range(*target.units),
                words=_format_range(*target.words),
                depth=_DEPTH[style],
            )
        )
    if shape.outline:
        listed = "\n".join(f"{n}. {heading}" for n, heading in enumerate(shape.outline, 1))
        sections.append(prompts.fill(prompts.Prompt.REPORT_OUTLINE, sections=listed))
    return sections


def research_sections(language: str | None) -> list[str]:
    """A research sub-agent's section: the languages to search in, when the report is not in English."""
    if language is None or language == ENGLISH:
        return []
    return [prompts.fill(prompts.Prompt.SEARCH_LANGUAGE, language=language_name(language))]


def _question_language(messages: Sequence[AnyMessage]) -> str | None:
    found = detect_language(latest_user_text(messages))
    if found is None:
        found = detect_language(" ".join(m.text for m in messages if is_user_turn(m)))
    return None if found == ENGLISH else found


async def run_language(run: Run, shape: ReaderShape, messages: Sequence[AnyMessage]) -> str | None:
    """The run's report language: the configured code, or (``auto``) the question's, told once per run; either
    is attached to the run as its ``RunLanguage``, which later parts of the run (the digest) read."""
    known = run.attachments.get(RunLanguage)
    if known is None:
        if shape.language != AUTO_LANGUAGE:
            known = RunLanguage(shape.language)
        else:
            # The detector's model loads on first use (about 1.5 s): never on the event loop.
            known = RunLanguage(await asyncio.to_thread(_question_language, messages))
        run.attachments.attach(known)
    return known.code


def _appended(system: SystemMessage | None, sections: list[str]) -> SystemMessage:
    text = "\n\n".join(sections)
    if system is None:
        return SystemMessage(content=text)
    if isinstance(system.content, str):
        return system.model_copy(update={"content": f"{system.content}\n\n{text}"})
    return system.model_copy(update={"content": [*system.content, {"type": "text", "text": text}]})


class ReaderShapeMiddleware(PerRoleMiddleware):
    """Adds the report's language, length and outline to the orchestrator's prompt, and the search languages
    to a research sub-agent's, when the run asks for them."""

    label = "ReaderShape"

    def __init__(self, *, role: str, shape: ReaderShape) -> None:
        if role not in (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT):
            raise ValueError(f"ReaderShapeMiddleware serves the orchestrator and research sub-agents, not {role!r}")
        super().__init__(role=role)
        self.shape = shape

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        if self.role == Role.ORCHESTRATOR:
            language = await run_language(run, self.shape, request.messages)
            sections = orchestrator_sections(self.shape, language)
        else:
            known = run.attachments.get(RunLanguage)
            language = known.code if known else (None if self.shape.language == AUTO_LANGUAGE else self.shape.language)
            sections = research_sections(language)
        if not sections:
            return await handler(request)
        return await handler(request.override(system_message=_appended(request.system_message, sections)))
