"""Contained calls: a failure in an orchestrator's model or tool call ends the run with a reason, never a traceback.

Contract (the orchestrator's outermost wrapper of its model and tool calls):
- a run that already has a ``run_error`` (a tool call failed internally, or ended the run) makes no more
  model calls: the call is answered with the error's detail (with a fixed line for an internal error, whose
  detail is for the log), so the agent ends;
- a model call that fails for good (once the retry middleware gave up: ``openai.APIError``,
  ``httpx.HTTPError``) does not raise: the error is classified into a detail that says what to fix
  (``model_errors.py``), recorded as the run's ``model_error``, and the agent stops;
- any other exception in a model or tool call (its middleware included) is logged and ends the run with
  ``internal_error``; a tool call is answered with a classified ``TOOL ERROR`` first, so the thread holds no
  unanswered call;
- a cancelled call (the run's own cancellation: the guards' deadlines end as ``TimeoutError`` inside their
  scopes) drops the run's stores, since its end hook never runs, and stays cancelled;
- LangGraph's control flow (interrupts, commands to a parent graph) passes through untouched.

langchain's ``ToolRetryMiddleware`` and ``ModelRetryMiddleware`` retry or re-raise; neither turns what is
left into an end status the run's closing names, hence this one.

Example:
    ```python
    contained = ContainedCallsMiddleware(
        endpoint=ModelEndpoint(base_url="http://127.0.0.1:8080/v1", model_tier="local", request_timeout=60.0)
    )
    agent = create_agent(model, middleware=[contained, ...])  # outermost
    ```

Raises:
    KnobError: from the constructor, for an ``endpoint`` that is not a ``ModelEndpoint``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import openai
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.conversation import deliverable_message
from ..domain.errors import tool_error_text
from ..domain.knobs import KnobError
from ..domain.names import EndReason, ToolErrorClass
from ..domain.stops import RunError
from ..run.containment import INTERNAL_ERROR
from .model_errors import ModelEndpoint, describe_model_error
from .run_call import LifecycleState, drop_run, this_call

logger = logging.getLogger(__name__)

STOPPED_ON_INTERNAL_ERROR = "(The run stopped on an internal error.)"


class ContainedCallsMiddleware(AgentMiddleware):
    """Turns what fails in the orchestrator's model and tool calls into the run's ``run_error``."""

    state_schema = LifecycleState

    def __init__(self, *, endpoint: ModelEndpoint) -> None:
        """``endpoint``: the model server, tier and timeout a failed model call's explanation names."""
        if not isinstance(endpoint, ModelEndpoint):
            raise KnobError(type(self).__name__, "endpoint", endpoint, "a ModelEndpoint")
        super().__init__()
        self.endpoint = endpoint

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        error: RunError | None = request.state.get("run_error")  # type: ignore[assignment]
        if error:
            if error["reason"] == EndReason.INTERNAL_ERROR:
                return ModelResponse(result=[AIMessage(content=STOPPED_ON_INTERNAL_ERROR)])
            return ModelResponse(result=[deliverable_message(error["detail"])])
        try:
            return await handler(request)
        except asyncio.CancelledError:
            drop_run(this_call())
            raise
        except (openai.APIError, httpx.HTTPError) as exc:
            detail = describe_model_error(exc, self.endpoint)
            logger.warning("model call failed: %s", detail)
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[AIMessage(content=f"(The model call failed: {detail})")]),
                command=Command(update={"run_error": RunError(reason=EndReason.MODEL_ERROR.value, detail=detail)}),
            )
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            logger.exception("internal error in a model call of the orchestrator")
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[AIMessage(content=STOPPED_ON_INTERNAL_ERROR)]),
                command=Command(update={"run_error": INTERNAL_ERROR}),
            )

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        try:
            return await handler(request)
        except asyncio.CancelledError:
            drop_run(this_call())
            raise
        except GraphBubbleUp:
            raise
        except Exception:  # noqa: BLE001 - the user gets an end status, never a traceback
            name = request.tool_call["name"]
            logger.exception("internal error in the orchestrator's %s tool call", name)
            failed = ToolMessage(
                tool_error_text(name, ToolErrorClass.PERMANENT, "the run stopped on an internal error."),
                tool_call_id=request.tool_call["id"],
                name=name,
                status="error",
            )
            return Command(update={"messages": [failed], "run_error": INTERNAL_ERROR})
