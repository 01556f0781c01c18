"""The assist's argument repair: a tool whose one required argument is a list runs one item written as its arguments.

Qwen2.5-Coder-0.5B wrote ``write_todos`` with ``"arguments": [{"content": …, "status": …}]``, which reads as the
arguments ``{"content": …, "status": …}``: one todo where the tool takes a list of them. ``one_item_list`` is the
repair the text tool calls apply (``modelcalls/text_tool_calls.py``, its ``repair`` knob) when an agent's assist
is on: when that one item fits, the call runs as the one-item list. Without the assist, the call is refused with
what does not fit and an example, like any call whose arguments do not fit.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool

from ..tools.arguments import argument_problem, tool_schema


def one_item_list(tool: BaseTool | dict[str, Any], args: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` as the one item of ``tool``'s one required list argument, when that fits; else None."""
    listed = _list_argument(tool_schema(tool)[1])
    if not listed or not args or listed in args:
        return None
    repaired = {listed: [dict(args)]}
    return None if argument_problem(tool, repaired) else repaired


def _list_argument(schema: dict[str, Any]) -> str | None:
    """The tool's one required argument when it is a list, else None."""
    required = schema.get("required") or []
    if len(required) != 1:
        return None
    spec = (schema.get("properties") or {}).get(required[0]) or {}
    return required[0] if spec.get("type") == "array" else None
