"""Tool calls a model wrote as text become real tool calls, when they name an offered tool and validate.

Contract (one instance per agent, in its guard chain inside the answer gate, so the gate, the loop guard
and the runaway guard judge the calls as they will run):
- it acts on a reply with no ``tool_calls`` whose text holds calls in a shape ``tool_text`` reads
  (fenced or bare JSON, the echoed schema, ``<tool_call>`` tags, ``[TOOL_CALLS]``, ``<|python_tag|>``);
- a call whose name is one of the request's tools and whose arguments validate against that tool's schema
  (keys the schema does not know, such as an echoed ``"type": "object"``, are dropped first) runs, once per
  distinct name and arguments: the reply is replaced by one with those ``tool_calls``, no text and
  ``response_metadata[TEXT_TOOL_CALLS_KEY]`` set, and ``status: warning`` (reason
  ``text_tool_calls``) names them and any call that could not run;
- when none of the written calls can run, the model is told once per conversation, in a harness message
  with an example of the right form, and asked again in the same step; after that, replies pass unchanged;
- ``repair`` (the assist's ``one_item_list``, when the agent's assist is on) may turn arguments that do not fit
  into ones that do; without it, such a call cannot run;
- ``enabled=False`` (``DRA_TEXT_TOOL_CALLS=false``) passes every reply unchanged.
Streaming or not makes no difference: the middleware sees the reply once the model call returns it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, ToolCall
from langchain_core.tools import BaseTool

from ..domain.conversation import harness_message, is_harness_message, respond
from ..domain.knobs import KnobError, callable_knob
from ..domain.names import WarningReason
from ..domain.per_role import PerRoleMiddleware
from ..protocol.events import WarningStatus, emit
from ..tools.arguments import argument_problem, example_call, tool_schema
from .tool_text import TextToolCall, parse_text_tool_calls

GUIDE_OPENING = "Your reply wrote a tool call as text, and it did not run"
# Marks a reply whose tool calls were read from its text: each is a whole JSON object, so a reply cut at the
# output cap still holds complete calls (the runaway guard keeps them).
TEXT_TOOL_CALLS_KEY = "text_tool_calls"
# Arguments that do not fit a tool made into ones that do, or None when it cannot (the assist's).
ArgumentRepair = Callable[[BaseTool | dict[str, Any], dict[str, Any]], dict[str, Any] | None]


def validate_call(
    call: TextToolCall, tool: BaseTool | dict[str, Any] | None, repair: ArgumentRepair | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The call's arguments as the tool takes them (as ``repair`` makes them fit, when given), or None and why
    they do not fit."""
    if tool is None:
        return None, f"{call.name!r} is not one of your tools"
    _, schema = tool_schema(tool)
    properties = schema.get("properties")
    args = dict(call.args)
    if isinstance(properties, dict) and properties and schema.get("additionalProperties") is not True:
        args = {key: value for key, value in args.items() if key in properties}
    problem = argument_problem(tool, args)
    if not problem:
        return args, ""
    repaired = repair(tool, dict(call.args)) if repair is not None else None
    return (repaired, "") if repaired is not None else (None, problem)


class TextToolCallsMiddleware(PerRoleMiddleware):
    """Runs the tool calls a model wrote as text; tells it once how to call tools when they cannot run."""

    label = "TextToolCalls"

    def __init__(self, *, role: str, enabled: bool = True, repair: ArgumentRepair | None = None) -> None:
        """``enabled``: read tool calls from text at all (False passes every reply unchanged); ``repair``: makes
        arguments that do not fit a tool fit it, when it can (the assist's)."""
        if not isinstance(enabled, bool):
            raise KnobError(type(self).__name__, "enabled", enabled, "True or False")
        callable_knob(type(self).__name__, "repair", repair, optional=True)
        super().__init__(role=role)
        self.enabled = enabled
        self.repair = repair

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        response = await handler(request)
        if not self.enabled or not request.tools:
            return response
        reply = _plain_reply(response)
        if reply is None:
            return response
        written = parse_text_tool_calls(reply.text)
        if not written:
            return response
        tools = {tool_schema(tool)[0]: tool for tool in request.tools}
        runnable: list[ToolCall] = []
        refused: list[str] = []
        seen: set[str] = set()
        for call in written:
            args, problem = validate_call(call, tools.get(call.name), self.repair)
            if args is None:
                refused.append(problem)
            elif (key := f"{call.name}\x00{json.dumps(args, sort_keys=True, default=str)}") not in seen:
                seen.add(key)
                runnable.append(
                    ToolCall(name=call.name, args=args, id=f"call_{uuid.uuid4().hex[:24]}", type="tool_call")
                )
        if runnable:
            emit(
                WarningStatus(
                    reason=WarningReason.TEXT_TOOL_CALLS,
                    detail=f"The model wrote {len(runnable)} tool call{'s' if len(runnable) != 1 else ''} as text "
                    f"({', '.join(call['name'] for call in runnable)}); they run as tool calls."
                    + (f" Not run: {'; '.join(refused)}." if refused else ""),
                )
            )
            metadata = {**reply.response_metadata, TEXT_TOOL_CALLS_KEY: True}
            converted = reply.model_copy(
                update={"content": "", "tool_calls": runnable, "invalid_tool_calls": [], "response_metadata": metadata}
            )
            return ModelResponse(
                result=[*response.result[:-1], converted], structured_response=response.structured_response
            )
        if _guided(request.messages):
            return response
        example = example_call(*tool_schema(_closest_tool(written, request.tools)))
        guide = harness_message(
            f"{GUIDE_OPENING}: {'; '.join(refused)}. Call tools through the tool-calling interface; if you write "
            f"one as text, write only a JSON object per call, one per line, naming one of your tools, like this:\n"
            f"{example}"
        )
        added = [*response.result, guide]
        again = await handler(request.override(messages=[*request.messages, *added]))
        return respond(added, model_response=again)


def _plain_reply(response: ModelResponse) -> AIMessage | None:
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or is_harness_message(reply) or not reply.text:
        return None
    return reply


def _guided(messages: Sequence[AnyMessage]) -> bool:
    return any(is_harness_message(message) and message.text.startswith(GUIDE_OPENING) for message in messages)


def _closest_tool(
    written: Sequence[TextToolCall], tools: Sequence[BaseTool | dict[str, Any]]
) -> BaseTool | dict[str, Any]:
    """The offered tool the model meant (the first one it named), else the first one offered."""
    by_name = {tool_schema(tool)[0]: tool for tool in tools}
    return next((by_name[call.name] for call in written if call.name in by_name), tools[0])
