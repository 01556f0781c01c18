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

``EndpointChatModel`` is ``ChatOpenAI`` with what real OpenAI-compatible servers need (llama.cpp, vLLM,
Ollama, ``llama_cpp.server``; measured in ``docs/local-models.md``):
- an assistant message with tool calls goes out with ``content: ""``, never ``null``, which some servers
  answer with HTTP 500 (OpenAI and OpenRouter take both);
- reasoning never reaches the agent: ``<think>`` blocks are cut from every reply, streamed or not (a tag
  split across chunks included), and ``reasoning_content`` is dropped, so no report, finding, verdict or
  answer can carry it;
- a stream whose chunks repeat a tool call's name is read as one name (langchain would concatenate them
  into ``web_searchweb_search``);
- a stream that reports no usage gets an estimate (~4 characters per token), so budgets still count it.
langchain-openai leaves all of these to subclasses ("use a provider-specific subclass"), hence this one.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import langchain_core.messages.content as _content
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from ..domain.knobs import not_negative
from ..domain.names import Role
from ..settings import ModelSettings, ModelSpec
from .tool_text import strip_reasoning

PLACEHOLDER_KEY = "missing-key"
AGENT_HEADER = "X-DRA-Agent"


def _memoise_content_block_types() -> None:
    compute = getattr(_content, "_get_data_content_block_types", None)
    if callable(compute) and not hasattr(compute, "cache_info"):
        _content._get_data_content_block_types = functools.cache(compute)


_memoise_content_block_types()


_OPEN_TAG = "<think>"
_CLOSE_TAG = "</think>"
_CHARS_PER_TOKEN = 4


class ReasoningFilter:
    """Cuts ``<think>`` blocks out of text that arrives in pieces; a tag split across pieces is held back."""

    def __init__(self) -> None:
        self.inside = False
        self.pending = ""

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        self.pending = ""
        out: list[str] = []
        while text:
            tag = _CLOSE_TAG if self.inside else _OPEN_TAG
            found = text.lower().find(tag)
            if found >= 0:
                if not self.inside:
                    out.append(text[:found])
                text = text[found + len(tag) :]
                self.inside = not self.inside
                continue
            held = _partial_tag_suffix(text, tag)
            if not self.inside:
                out.append(text[: len(text) - held])
            self.pending = text[len(text) - held :] if held else ""
            break
        return "".join(out)

    def flush(self) -> str:
        rest, self.pending = ("" if self.inside else self.pending), ""
        return rest


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that begins ``tag``."""
    lowered = text.lower()
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(lowered[-size:]):
            return size
    return 0


def _clean_reply(message: AIMessage) -> AIMessage:
    """``message`` without reasoning: no ``<think>`` text, no ``reasoning_content``."""
    kwargs = {k: v for k, v in message.additional_kwargs.items() if k != "reasoning_content"}
    update: dict[str, Any] = {}
    if len(kwargs) != len(message.additional_kwargs):
        update["additional_kwargs"] = kwargs
    if isinstance(message.content, str) and "think>" in message.content.lower():
        update["content"] = strip_reasoning(message.content)
    return message.model_copy(update=update) if update else message


class EndpointChatModel(ChatOpenAI):
    """``ChatOpenAI`` for any OpenAI-compatible server (see the module docstring)."""

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        for message in payload.get("messages") or []:
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
        return payload

    def _create_chat_result(self, response: Any, generation_info: dict[str, Any] | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        for generation in result.generations:
            if isinstance(generation.message, AIMessage):
                generation.message = _clean_reply(generation.message)
        return result

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # The parent streams without the callback manager: tokens reach listeners only once cleaned here.
        reasoning = ReasoningFilter()
        names: dict[int, str] = {}
        usage_seen = False
        output_chars = 0
        async for chunk in super()._astream(messages, stop, None, **kwargs):
            message = chunk.message
            if isinstance(message, AIMessageChunk):
                message = _cleaned_chunk(message, reasoning, names)
                usage_seen = usage_seen or message.usage_metadata is not None
                output_chars += len(message.text) + sum(len(c.get("args") or "") for c in message.tool_call_chunks)
                chunk = ChatGenerationChunk(message=message, generation_info=chunk.generation_info)
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
        tail = reasoning.flush()
        if tail or not usage_seen:
            usage = None
            if not usage_seen:
                input_tokens = count_tokens_approximately(messages)
                output_tokens = max(1, output_chars // _CHARS_PER_TOKEN)
                usage = {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "total_tokens": input_tokens + output_tokens,
                }
            last = ChatGenerationChunk(message=AIMessageChunk(content=tail, usage_metadata=usage))  # type: ignore[arg-type]
            if run_manager:
                await run_manager.on_llm_new_token(last.text, chunk=last)
            yield last


def _cleaned_chunk(message: AIMessageChunk, reasoning: ReasoningFilter, names: dict[int, str]) -> AIMessageChunk:
    """One streamed chunk without reasoning text, and without a tool name its stream already gave."""
    update: dict[str, Any] = {}
    if isinstance(message.content, str) and message.content:
        update["content"] = reasoning.feed(message.content)
    if "reasoning_content" in message.additional_kwargs:
        update["additional_kwargs"] = {k: v for k, v in message.additional_kwargs.items() if k != "reasoning_content"}
    if message.tool_call_chunks:
        chunks = []
        for piece in message.tool_call_chunks:
            index = piece.get("index") or 0
            name = piece.get("name")
            if name and names.get(index) == name:
                piece = {**piece, "name": None, "id": None}
            elif name:
                names[index] = name
            chunks.append(piece)
        update["tool_call_chunks"] = chunks
    return message.model_copy(update=update) if update else message


def chat_model(settings: ModelSettings, spec: ModelSpec, role: Role) -> ChatOpenAI:
    """The model ``spec`` names (a slot of the run's tier) on the endpoint and with the call options of
    ``settings``, for ``role``'s calls (named in every request's ``AGENT_HEADER``). A negative or non-finite
    ``temperature``, ``request_timeout`` or ``max_output_tokens`` is refused with a ``KnobError``."""
    for name in ("temperature", "request_timeout", "max_output_tokens"):
        not_negative("chat_model", name, getattr(settings, name))
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else PLACEHOLDER_KEY
    return EndpointChatModel(
        model=spec.slug,
        base_url=settings.base_url,
        api_key=key,
        use_responses_api=False,
        temperature=settings.temperature,
        max_tokens=settings.max_output_tokens or None,
        timeout=settings.request_timeout,
        # langchain-openai's own 120 s wait for a stream's first chunk would cut off a local server still
        # reading a cold prompt (minutes on a small CPU): the request's timeout is the one bound.
        stream_chunk_timeout=settings.request_timeout or None,
        max_retries=0,
        streaming=settings.streams(spec),
        stream_usage=True,
        profile={"max_input_tokens": spec.context_window},
        default_headers={AGENT_HEADER: str(role)},
    )
