"""Chat models for each tier slot, on any OpenAI-compatible endpoint.

Models are ``ChatOpenAI`` instances on the chat-completions API (not the Responses API, which most
compatible servers lack), each with a context-window profile so compaction knows its trigger. The
client never retries by itself: ``ModelCallRetryMiddleware`` does, so every wait is visible as an event
and bounded by the run's settings.
"""

from __future__ import annotations

from langchain_openai import ChatOpenAI

from .settings import ResearchConfig, Slot

PLACEHOLDER_KEY = "missing-key"


def chat_model(settings: ResearchConfig, slot: Slot) -> ChatOpenAI:
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
    )
