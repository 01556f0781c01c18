"""The sandbox tools of the roles that run code: deepagents' file and execute tools, trimmed per role.

Only the sandbox's own tools are trimmed here; the deployment's custom tools reach these roles too
(``graph._sandbox_roles``) and pass through untouched.

Contract (``sandbox_tools(backend, role)``, for the coding and extract sub-agents):
- the tools are deepagents' ``FilesystemMiddleware`` tools over ``SandboxBackend``, its large-result
  eviction off (``tools/results.py`` owns result sizes, and the sandbox caps command output itself);
- **coding-subagent** has ``read_file``, ``write_file``, ``edit_file`` and ``execute``; a ``python -c``
  one-liner is refused with a permanent error that says to write the script to a file (shell quoting is
  what breaks one-liners, and a file is what the ``script`` event shows);
- **extract-subagent** has ``execute`` only: deepagents requires ``read_file`` in its tool list, so
  ``SandboxToolsMiddleware`` hides it from the model and refuses a call to it;
- after a sandbox reset, the next sandbox tool result of every agent carries the session's one-time
  notice that earlier files are gone (``SandboxSession.notice_for``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import tool_error_text
from ..domain.names import Role, ToolErrorClass, ToolName
from ..domain.per_role import PerRoleMiddleware
from ..protocol.sender import current_sender
from ..run import Run, run_hook
from .backend import SandboxBackend

ROLE_TOOLS: dict[str, tuple[ToolName, ...]] = {
    Role.CODING_SUBAGENT: (ToolName.READ_FILE, ToolName.WRITE_FILE, ToolName.EDIT_FILE, ToolName.EXECUTE),
    Role.EXTRACT_SUBAGENT: (ToolName.EXECUTE,),
}
SANDBOX_TOOLS = frozenset({ToolName.READ_FILE, ToolName.WRITE_FILE, ToolName.EDIT_FILE, ToolName.EXECUTE})
MAX_EXECUTE_TIMEOUT_S = 900
PYTHON_ONE_LINER = re.compile(r"\bpython(?:3(?:\.\d+)?)?\s+(?:-[A-Za-z]+\s+)*-[A-Za-z]*c\b")
ONE_LINER_REFUSAL = tool_error_text(
    ToolName.EXECUTE,
    ToolErrorClass.PERMANENT,
    "`python -c` one-liners are not run here. Write the script to a file with "
    'write_file (e.g. /workspace/task.py), then run it: execute("python3 /workspace/task.py").',
)


def sandbox_tools(backend: SandboxBackend, role: str) -> list[AgentMiddleware]:
    allowed = ROLE_TOOLS[role]
    listed = [ToolName.READ_FILE, *(t for t in allowed if t != ToolName.READ_FILE)]
    return [
        SandboxToolsMiddleware(role=role, backend=backend, allowed=allowed),
        FilesystemMiddleware(
            backend=backend,
            tools=[str(t) for t in listed],  # type: ignore[misc]
            tool_token_limit_before_evict=None,
            human_message_token_limit_before_evict=None,
            max_execute_timeout=MAX_EXECUTE_TIMEOUT_S,
        ),
    ]


class SandboxToolsMiddleware(PerRoleMiddleware):
    """Shows a role only its sandbox tools, refuses one-liners for the coder, and passes on reset notices."""

    label = "SandboxTools"

    def __init__(self, *, role: str, backend: SandboxBackend, allowed: tuple[ToolName, ...]) -> None:
        super().__init__(role=role)
        self.backend = backend
        self.hidden = SANDBOX_TOOLS - set(allowed)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        if self.hidden:
            request = request.override(tools=[t for t in request.tools if _name(t) not in self.hidden])
        return await handler(request)

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        call = request.tool_call
        name = call["name"]
        if name not in SANDBOX_TOOLS:
            return await handler(request)
        if name in self.hidden:
            return _refused(
                call, tool_error_text(name, ToolErrorClass.PERMANENT, f"this agent has no {name} tool; use execute.")
            )
        command = str((call.get("args") or {}).get("command") or "")
        if self.role == Role.CODING_SUBAGENT and name == ToolName.EXECUTE and PYTHON_ONE_LINER.search(command):
            return _refused(call, ONE_LINER_REFUSAL)
        result = await handler(request)
        session = self.backend.connector.session(run.attachments)
        sender = current_sender.get()
        notice = session.notice_for(sender.task_id or sender.role)
        if notice and isinstance(result, ToolMessage):
            return result.model_copy(update={"content": f"{notice}\n{result.text}"})
        return result


def _refused(call: dict, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")


def _name(tool: object) -> str | None:
    return tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)
