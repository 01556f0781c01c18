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
# How deep an example fills nested lists and objects; deeper ones stay empty.
_EXAMPLE_DEPTH = 3


def tool_schema(tool: BaseTool | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool's name and the JSON schema of the arguments a model gives it."""
    if isinstance(tool, BaseTool):
        schema = tool.tool_call_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return tool.name, schema.model_json_schema()
        return tool.name, dict(schema) if isinstance(schema, dict) else {}
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    return str(function.get("name", "")), dict(function.get("parameters") or function.get("input_schema") or {})


def example_call(name: str, schema: dict[str, Any], *, fill: str = "") -> str:
    """One line a model can copy: ``{"name": …, "arguments": {…}}`` with a placeholder per required argument.

    A list holds one example item and an object its required keys, filled in the same way (an enum gives its
    first value), so a model sees the shape of a todo, not ``[]``: small models copy the example's shape.
    ``fill``, when given, is the value of the first required argument that takes text (a search's query)."""
    args = _example(schema, schema, "arguments", depth=0)
    if fill and isinstance(args, dict):
        properties = schema.get("properties") or {}
        text = next((key for key in args if (properties.get(key) or {}).get("type") == "string"), None)
        if text is not None:
            args[text] = fill
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def _example(schema: dict[str, Any], root: dict[str, Any], key: str, *, depth: int) -> Any:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/")) or {}
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if depth < _EXAMPLE_DEPTH and kind == "array" and isinstance(schema.get("items"), dict):
        return [_example(schema["items"], root, key, depth=depth + 1)]
    properties = schema.get("properties")
    if depth < _EXAMPLE_DEPTH and (kind == "object" or isinstance(properties, dict)):
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required") or (list(properties)[:1] if depth == 0 else [])
        return {name: _example(properties.get(name) or {}, root, name, depth=depth + 1) for name in required}
    return _PLACEHOLDERS.get(kind, f"<{key}>") if isinstance(kind, str) else f"<{key}>"


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
