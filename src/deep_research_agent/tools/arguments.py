"""The arguments a tool takes, as a model must give them: their schema, a one-line example call, and why given
arguments do not fit.

Pure functions over a tool (a ``BaseTool`` or an OpenAI-style tool dict). One owner for the tool-error
middleware (a validation error reaches the model with an example), the text tool calls (``modelcalls``) and
the no-tool-call nudge (``lifecycle``).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

_PLACEHOLDERS: dict[str, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
_SHOWN_PROBLEMS = 3


def tool_schema(tool: BaseTool | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool's name and the JSON schema of the arguments a model gives it."""
    if isinstance(tool, BaseTool):
        schema = tool.tool_call_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return tool.name, schema.model_json_schema()
        return tool.name, dict(schema) if isinstance(schema, dict) else {}
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    return str(function.get("name", "")), dict(function.get("parameters") or function.get("input_schema") or {})


def example_call(name: str, schema: dict[str, Any]) -> str:
    """One line a model can copy: ``{"name": …, "arguments": {…}}`` with a placeholder per required argument."""
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)[:1]
    args = {key: _PLACEHOLDERS.get((properties.get(key) or {}).get("type"), f"<{key}>") for key in required}
    return json.dumps({"name": name, "arguments": args})


def argument_problem(tool: BaseTool | dict[str, Any], args: dict[str, Any]) -> str:
    """Why ``args`` do not fit ``tool`` (its missing arguments, or its schema's first few complaints); "" when
    they fit, or when the tool has no schema to check them against."""
    name, schema = tool_schema(tool)
    missing = [key for key in schema.get("required") or () if key not in args]
    if missing:
        return f"{name} needs {', '.join(missing)}"
    model = tool.tool_call_schema if isinstance(tool, BaseTool) else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return ""
    try:
        model.model_validate(args)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()[:_SHOWN_PROBLEMS]
        ]
        return f"{name}: {'; '.join(problems)}"
    return ""
