"""What a client that streams sub-agents sees of a research unit: short progress lines, not tool payloads.

Contract (research sub-agents only; the outermost middleware of their stack):
- a tool result that succeeded is kept in the sub-agent's messages as one progress line (``progress_line``:
  ``Searched the web for "<query>"``, ``Read <title> — <url>``, ``Got the results of the extract-subagent``,
  ``Used <tool>``), its full text in the private
  ``tool_texts`` by call id; every model call of the sub-agent gets the full text back in the line's place, so
  the model, and every middleware inside this one, reads exactly what the tool returned;
- an error result (``TOOL ERROR (tool, kind)``) stays as it is: it is short, and says what went wrong;
- each line is also shown on the unit's card in a client that streams only the orchestrator's messages (as
  deep-agents-ui does: its sub-agent card's Output is the ``task`` call's tool result): a ``messages`` row at the
  orchestrator's level, a ``task`` tool message ``In progress: <line>`` for that call, streamed and never
  stored (``unit_card``); the hand-over's own result replaces it when the unit ends;
- the sub-agent's model calls are tagged ``nostream``, so its replies reach a ``messages`` stream as the model
  node's output, after this middleware: a final answer whose findings the gate staged is kept as
  ``Handing over: <summary> (<n> findings)``; the orchestrator's hand-over takes the staged object, never the
  text. A bounced or unparsed answer keeps its text (the hand-over passes that text on).

Why this shape: LangGraph's ``messages`` stream mode emits every message a subgraph's node outputs (clients
that stream subgraphs, as agent-chat-ui does, show each as a row) and every chat model reply not tagged
``nostream``; what it emits is what the node wrote to state. So the state holds the line and the model is
given the text, the way the orchestrator is given each hand-over's JSON (``publish.py``). The sub-agent is not
checkpointed, so ``tool_texts`` lives for the unit only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, NotRequired
from uuid import uuid4

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.config import get_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import TOOL_ERROR_PREFIX
from ..domain.findings import Findings
from ..domain.names import ToolName
from ..domain.urls import domain_of
from ..protocol.sender import current_sender
from ..run import current_run

_ARG_CHARS = 120
IN_PROGRESS = "In progress: "

# The card of the unit this sub-agent works on: shows one line there (set by the orchestrator's hand-over).
_card: ContextVar[Callable[[str], Awaitable[None]] | None] = ContextVar("dra_unit_card", default=None)


def _merged(old: dict[str, str] | None, new: dict[str, str] | None) -> dict[str, str]:
    return {**(old or {}), **(new or {})}


class ProgressState(AgentState):
    tool_texts: NotRequired[Annotated[dict[str, str], PrivateStateAttr, _merged]]


def progress_line(tool: str, args: dict[str, Any], *, title: str = "") -> str:
    """The one line a client shows for a successful call of ``tool`` with ``args``."""
    if tool == ToolName.WEB_SEARCH:
        return f'Searched the web for "{_short(args.get("query"))}"'
    if tool == ToolName.WEB_FETCH:
        url = _short(args.get("url"))
        return f"Read {' '.join(title.split()) or domain_of(url) or 'a page'} — {url}"
    if tool == ToolName.CORPUS_SEARCH:
        return f'Searched the local documents for "{_short(args.get("query"))}"'
    if tool == ToolName.CORPUS_READ:
        return "Read a passage of the local documents"
    if tool == ToolName.TASK:
        return f"Got the results of the {_short(args.get('subagent_type')) or 'helper'}"
    return f"Used {tool}"


def handing_over_line(findings: Findings) -> str:
    count = len(findings.findings)
    summary = " ".join(findings.summary.split())
    return f"Handing over: {summary} ({count} finding{'s' if count != 1 else ''})"


class ProgressLinesMiddleware(AgentMiddleware):
    """Keeps a research unit's tool results and hand-over as progress lines, and gives its model the full texts."""

    state_schema = ProgressState

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        result = await handler(request)
        message = tool_message_of(result)
        if message is None or message.status == "error" or message.text.startswith(TOOL_ERROR_PREFIX):
            return result
        call = request.tool_call
        args = call.get("args") or {}
        line = progress_line(call["name"], args, title=_page_title(args.get("url")))
        if (show := _card.get()) is not None:
            await show(line)
        short = message.model_copy(update={"content": line})
        if isinstance(result, ToolMessage):
            return Command(update={"messages": [short], "tool_texts": {message.tool_call_id: message.text}})
        update = dict(result.update or {}) if isinstance(result.update, dict) else {}
        update["messages"] = [short if m is message else m for m in update.get("messages", [])]
        update["tool_texts"] = {**(update.get("tool_texts") or {}), message.tool_call_id: message.text}
        return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        texts = request.state.get("tool_texts") or {}
        messages = [_with_text(m, texts) for m in request.messages]
        model = request.model
        tags = list(getattr(model, "tags", None) or [])
        if TAG_NOSTREAM not in tags and hasattr(model, "model_copy"):
            model = model.model_copy(update={"tags": [*tags, TAG_NOSTREAM]})
        response = await handler(request.override(messages=messages, model=model))
        return _handing_over(response)


@contextmanager
def unit_card(task_id: str) -> Iterator[None]:
    """Within it, the progress lines of the unit that ``task`` call ``task_id`` runs are shown on its card.

    The line is the output of a step named like the orchestrator's tool node, run in that node's config: that is
    how LangGraph's ``messages`` stream mode finds what a node outputs (with the node's namespace), so the row
    reaches clients that stream the orchestrator's messages only, and the state never holds it."""
    try:
        config = get_config()
    except RuntimeError:  # outside a graph run: no client streams it
        yield
        return
    node = str((config.get("metadata") or {}).get("langgraph_node") or "tools")

    async def show(line: str) -> None:
        row = ToolMessage(content=IN_PROGRESS + line, tool_call_id=task_id, name=ToolName.TASK, id=str(uuid4()))
        await RunnableLambda(lambda _: [row], name=node).ainvoke(None, config)

    token = _card.set(show)
    try:
        yield
    finally:
        _card.reset(token)


def with_tool_texts(messages: Sequence[AnyMessage], texts: dict[str, str] | None) -> list[AnyMessage]:
    """``messages`` as the model reads them: each progress line replaced by the full tool result it stands for."""
    return [_with_text(m, texts) for m in messages] if texts else list(messages)


def _with_text(message: AnyMessage, texts: dict[str, str]) -> AnyMessage:
    if isinstance(message, ToolMessage) and (text := texts.get(message.tool_call_id)) is not None:
        return message.model_copy(update={"content": text})
    return message


def _handing_over(response: Any) -> Any:
    """The final answer as its hand-over line, once the gate has staged its findings."""
    inner = response.model_response if isinstance(response, ExtendedModelResponse) else response
    messages: list[BaseMessage] = [inner] if isinstance(inner, AIMessage) else list(getattr(inner, "result", []))
    answer = messages[-1] if messages else None
    task_id = current_sender.get().task_id
    if not isinstance(answer, AIMessage) or answer.tool_calls or not task_id:
        return response
    staged = _staged(task_id)
    if staged is None:
        return response
    replaced = answer.model_copy(update={"content": handing_over_line(staged)})
    if isinstance(inner, AIMessage):
        return replaced
    result = ModelResponse(result=[*messages[:-1], replaced], structured_response=inner.structured_response)
    if isinstance(response, ExtendedModelResponse):
        return ExtendedModelResponse(model_response=result, command=response.command)
    return result


def _staged(task_id: str) -> Findings | None:
    return current_run().evidence.staged_for(task_id)


def _page_title(url: object) -> str:
    if not isinstance(url, str):
        return ""
    record = current_run().evidence.source(url)
    return record.title if record is not None else ""


def _short(value: object) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= _ARG_CHARS else text[: _ARG_CHARS - 1].rstrip() + "…"


def tool_message_of(result: ToolMessage | Command) -> ToolMessage | None:
    """The tool message a tool call answered with, bare or inside a ``Command``'s update."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result.update, dict) else {}
    messages = [m for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    return messages[-1] if messages else None
