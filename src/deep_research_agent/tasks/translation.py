"""The digest's wording in the report's language: one small call on the tier's utility model, kept per process.

Contract: ``WordingTranslator(model_factory=..., model=..., on_model_response=...)`` is the ``TaskMiddleware``'s
translator; ``await translator(usage, language)`` is the wording (``tasks/wording.py``) in ``language`` (a
code). The first time a process needs a language, it sends the English wording to the ``utility`` slot's
model as role ``translation`` (named in the request's ``X-DRA-Agent`` header), tool-less, tagged so nothing
of it reaches the client's message stream, bounded by ``timeout_s``, and meters it as a side call
(``on_model_response``: the graph passes ``side_call_meter``). A wording that parses is kept for that
(model, language) for the life of the process, so every later run in it pays nothing; a failure is not
kept, so the next run asks again. It raises what the model raises, ``TimeoutError``, or ``WordingError``
for an answer that is no usable wording: the middleware falls back to English and warns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import cached_property

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

from ..domain.knobs import KnobError, callable_knob, positive
from ..domain.names import Role
from ..run import UsageMeter
from ..settings import Slot
from .wording import DigestWording, WordingError, parse_wording, translation_request

ModelFactory = Callable[[Slot, Role], BaseChatModel]

# The English wording is about 400 tokens; a language that takes more tokens per word still fits.
TRANSLATION_MAX_TOKENS = 2000
TRANSLATION_TIMEOUT_S = 60.0

# (model slug, language code) → the wording, for every run of the process.
_TRANSLATED: dict[tuple[str, str], DigestWording] = {}


class WordingTranslator:
    """Translates the digest's wording on the utility model, once per (model, language) per process."""

    def __init__(
        self,
        *,
        model_factory: ModelFactory,
        model: str,
        on_model_response: Callable[[UsageMeter, AIMessage], None] | None = None,
        timeout_s: float = TRANSLATION_TIMEOUT_S,
    ) -> None:
        """``model_factory(slot, role)`` builds the utility model on first use; ``model``: its slug, which keys
        the kept translations; ``on_model_response`` sees each reply with the run's usage meter."""
        owner = type(self).__name__
        callable_knob(owner, "model_factory", model_factory)
        callable_knob(owner, "on_model_response", on_model_response, optional=True)
        if not isinstance(model, str) or not model.strip():
            raise KnobError(owner, "model", model, "the utility model's slug")
        positive(owner, "timeout_s", timeout_s)
        self.model_factory = model_factory
        self.model_slug = model
        self.on_model_response = on_model_response
        self.timeout_s = timeout_s

    @cached_property
    def model(self) -> BaseChatModel:
        return self.model_factory("utility", Role.TRANSLATION)

    async def __call__(self, usage: UsageMeter, language: str) -> DigestWording:
        key = (self.model_slug, language)
        if (kept := _TRANSLATED.get(key)) is not None:
            return kept
        system, user = translation_request(language)
        reply = await asyncio.wait_for(
            self.model.ainvoke(
                [SystemMessage(system), HumanMessage(user)],
                config={"tags": [TAG_NOSTREAM], "metadata": {"lc_source": "digest_translation"}},
                max_tokens=TRANSLATION_MAX_TOKENS,
            ),
            timeout=self.timeout_s,
        )
        if not isinstance(reply, AIMessage):
            raise WordingError(f"the model returned {type(reply).__name__}, not a message")
        if self.on_model_response is not None:
            self.on_model_response(usage, reply)
        wording = parse_wording(reply.text)
        _TRANSLATED[key] = wording
        return wording
