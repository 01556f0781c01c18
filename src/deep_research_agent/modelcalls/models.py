"""Chat models for each tier slot, on any OpenAI-compatible endpoint.

Models are ``ChatOpenAI`` instances on the chat-completions API (not the Responses API, which most
compatible servers lack), each with a context-window profile so compaction knows its trigger. The
client never retries by itself: ``ModelCallRetryMiddleware`` does, so every wait is visible as an event
and bounded by the run's settings.

Each model belongs to one caller, a ``Role`` (an agent, or a side call such as triage or compaction), and
every request it sends names that role in the ``X-DRA-Agent`` header. The header is for whoever reads the
traffic (a proxy's logs, the tests' scripted model server, which answers each agent by it); an
OpenAI-compatible provider ignores a header it does not know, and the role carries no secret.

Importing this module memoises ``langchain_core.messages.content._get_data_content_block_types``: it
derives a constant tuple with ``typing.get_type_hints`` for every content block of every message on every
model call, which was about 8 % of the server's CPU in a burst of runs (``bench/burst.py``), since prompt
caching gives the messages content blocks. langchain-core 1.8 offers no cached form of it.
"""

from __future__ import annotations

import functools

import langchain_core.messages.content as _content
from langchain_openai import ChatOpenAI

from ..domain.names import Role
from ..settings import ResearchConfig, Slot

PLACEHOLDER_KEY = "missing-key"
AGENT_HEADER = "X-DRA-Agent"


def _memoise_content_block_types() -> None:
    compute = getattr(_content, "_get_data_content_block_types", None)
    if callable(compute) and not hasattr(compute, "cache_info"):
        _content._get_data_content_block_types = functools.cache(compute)


_memoise_content_block_types()


def chat_model(settings: ResearchConfig, slot: Slot, role: Role) -> ChatOpenAI:
    """The model of ``slot`` in the run's tier, for ``role``'s calls (named in every request's ``AGENT_HEADER``)."""
    spec = settings.tier.slot(slot)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else PLACEHOLDER_KEY
    streaming = settings.streams(spec)
    return ChatOpenAI(
        model=spec.slug,
        base_url=settings.base_url,
        api_key=key,
        use_responses_api=False,
        temperature=settings.temperature,
        max_tokens=settings.max_output_tokens or None,
        timeout=settings.request_timeout,
        max_retries=0,
        streaming=streaming,
        stream_usage=True,
        profile={"max_input_tokens": spec.context_window},
        default_headers={AGENT_HEADER: str(role)},
    )
