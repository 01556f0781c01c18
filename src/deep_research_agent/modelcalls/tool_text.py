"""Tool calls written as text: the shapes real models put in their message instead of ``tool_calls``.

Pure functions, no I/O. ``parse_text_tool_calls(text)`` finds every JSON object in a reply that names a
tool and carries its arguments, in the shapes measured on llama-server and the other families' templates:
- a bare or fenced JSON object ``{"name": …, "arguments": …}`` (or ``"parameters"``, ``"args"``,
  ``"input"``), the arguments an object, a JSON string, or a one-element list wrapping the object;
- the tool's own schema echoed back with the arguments filled in, with a stray closing brace after it;
- several such objects, one per line (parallel calls), or a JSON list of them;
- OpenAI's own ``{"type": "function", "function": {"name": …, "arguments": "…"}}`` and ``{"tool_calls": […]}``;
- Hermes/Qwen ``<tool_call>…</tool_call>``, Mistral ``[TOOL_CALLS][…]`` (and ``[TOOL_CALLS]name[ARGS]{…}``),
  Llama ``<|python_tag|>{…}`` (several separated by ``;``).
``strip_reasoning(text)`` drops ``<think>…</think>`` blocks (and an unopened block that ends in
``</think>``, which templates that open the block themselves produce).

Whether a parsed call names an offered tool and its arguments validate is the caller's decision
(``text_tool_calls.py``): this module only reads text. Hand-written because no maintained library reads
these shapes: vLLM's and llama.cpp's parsers live inside their servers, one family each.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_UNOPENED_THINK = re.compile(r"\A(?:(?!<think>).)*?</think>", re.DOTALL | re.IGNORECASE)
_MARKERS = re.compile(
    r"</?tool_call>|\[/?TOOL_CALLS\]|\[ARGS\]|<\|python_tag\|>|<\|eom_id\|>|<\|eot_id\|>|```[A-Za-z]*", re.IGNORECASE
)
_MISTRAL_NAMED = re.compile(r"\[TOOL_CALLS\]\s*([A-Za-z_][\w.-]*)\s*\[ARGS\]\s*", re.IGNORECASE)
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
_BARE_CALL_KEYS = frozenset({*_NAME_KEYS, "type", "id", "description"})
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class TextToolCall:
    """One tool call read from a reply's text: the tool's name and its arguments."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


def strip_reasoning(text: str) -> str:
    """``text`` without its ``<think>`` blocks (closed, unclosed, or closed without an opening tag)."""
    if "think>" not in text.lower():
        return text
    stripped = _THINK_BLOCK.sub("", text)
    stripped = _UNOPENED_THINK.sub("", stripped, count=1)
    return stripped.strip()


def parse_text_tool_calls(text: str) -> list[TextToolCall]:
    """Every tool call written in ``text``, in order; an empty list when it holds none."""
    if "{" not in text:
        return []
    text = strip_reasoning(text)
    calls: list[TextToolCall] = []
    # Mistral's named form carries the name outside the JSON: read those first, then scan the rest.
    rest: list[str] = []
    position = 0
    for match in _MISTRAL_NAMED.finditer(text):
        if match.start() < position:
            continue
        rest.append(text[position : match.start()])
        position = match.end()
        try:
            raw, position = _DECODER.raw_decode(text, match.end())
        except json.JSONDecodeError:
            continue
        if (args := _arguments(raw)) is not None:
            calls.append(TextToolCall(name=match.group(1), args=args))
    rest.append(text[position:])
    for value in _json_values(_MARKERS.sub(" ", "".join(rest))):
        calls.extend(_calls_in(value))
    return calls


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON object or list in ``text``; what is not JSON (prose, a stray brace) is skipped."""
    values: list[Any] = []
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        values.append(value)
        index = end


def _calls_in(value: Any) -> list[TextToolCall]:
    if isinstance(value, list):
        return [call for item in value for call in _calls_in(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _calls_in(value["tool_calls"])
    function = value.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        value = function
    name = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str) and value[key].strip()), None)
    if name is None:
        return []
    if not any(key in value for key in _ARG_KEYS) and set(value) - _BARE_CALL_KEYS:
        return []  # an object that merely has a name (a source, a person), not a call
    raw = next((value[key] for key in _ARG_KEYS if key in value), {})
    args = _arguments(raw)
    return [] if args is None else [TextToolCall(name=name.strip(), args=args)]


def _arguments(raw: Any) -> dict[str, Any] | None:
    """The arguments as an object: a JSON string is decoded, a one-element list unwrapped; None if neither."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return None
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]
    if raw is None:
        return {}
    return raw if isinstance(raw, dict) else None
