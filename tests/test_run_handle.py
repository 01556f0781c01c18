"""One run handle: a run is looked up at the entry points only, and everything below takes it as a parameter.

``current_run()`` reads the process-wide registry by the run id of the LangGraph config. Only a handful of
modules may call it: the registry itself, ``run/boundary.py`` (through which middleware hooks and tools
receive their run), and the places langchain or deepagents call with no hook of ours around them (the
lifecycle, the graph factory, the sandbox backend). ``@run_hook`` may mark a middleware hook only, so it
cannot stand in for a lookup deep in a helper.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Annotated

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import InjectedToolCallId, tool

from deep_research_agent.run import NoRunError, Run, bound_run, run_hook, run_tool

SOURCE = Path(__file__).resolve().parents[1] / "src" / "deep_research_agent"
MAX_MODULES_CALLING_CURRENT_RUN = 8
HOOKS = {
    name
    for name in vars(AgentMiddleware)
    if name.startswith(("before_", "after_", "wrap_", "abefore_", "aafter_", "awrap_"))
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def modules_calling_current_run() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = any(isinstance(n, ast.Call) and _name(n.func) == "current_run" for n in ast.walk(tree))
        defines = any(isinstance(n, ast.FunctionDef) and n.name == "current_run" for n in ast.walk(tree))
        if calls or defines:
            found.append(str(path.relative_to(SOURCE)))
    return found


def test_few_modules_look_a_run_up_and_the_rest_are_handed_it():
    modules = modules_calling_current_run()
    assert "run/registry.py" in modules
    assert len(modules) <= MAX_MODULES_CALLING_CURRENT_RUN, (
        f"{len(modules)} modules call current_run() (at most {MAX_MODULES_CALLING_CURRENT_RUN}): {', '.join(modules)}. "
        "Take the run (or the store needed) as a parameter from the hook or tool that serves the call "
        "(run/boundary.py) instead of looking it up again."
    )


def test_run_hook_marks_middleware_hooks_only():
    misplaced = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name not in HOOKS:
                if any(_name(d) == "run_hook" for d in node.decorator_list):
                    misplaced.append(f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}")
    assert not misplaced, "@run_hook on what is no middleware hook: " + ", ".join(misplaced)


def test_a_run_keeps_its_own_stores_and_features_keep_theirs_as_attachments():
    assert [f.name for f in dataclasses.fields(Run)] == [
        "key",
        "started_at",
        "started_monotonic",
        "usage",
        "evidence",
        "control",
        "failures",
        "recording",
        "attachments",
    ]


class Probe(AgentMiddleware):
    @run_hook
    async def awrap_tool_call(self, request, handler, *, run: Run):
        return await handler((request, run.key))


@pytest.mark.anyio
async def test_a_hook_receives_the_run_of_its_call_and_langchain_sees_its_own_signature():
    async def handler(request):
        return request

    with bound_run(Run(key="r1")):
        assert await Probe().awrap_tool_call("call", handler) == ("call", "r1")
    assert list(inspect.signature(Probe().awrap_tool_call).parameters) == ["request", "handler"]
    with pytest.raises(NoRunError):
        await Probe().awrap_tool_call("call", handler)


@tool("probe")
@run_tool
def probe(run: Run, text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Echo the text with the run's key."""
    return f"{run.key}: {text} ({tool_call_id})"


def test_a_tool_receives_the_run_of_its_call_and_the_model_sees_only_its_arguments():
    assert list(probe.tool_call_schema.model_json_schema()["properties"]) == ["text"]
    call = {"type": "tool_call", "id": "call-1", "name": "probe", "args": {"text": "hi"}}
    with bound_run(Run(key="r2")):
        assert probe.invoke(call).content == "r2: hi (call-1)"
    with pytest.raises(NoRunError):
        probe.invoke(call)
