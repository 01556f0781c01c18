"""A scripted, OpenAI-compatible chat-completions server for tests.

It stands in for an LLM provider: the product's ``ChatOpenAI`` (chat-completions
API, ``use_responses_api=False``) talks to it over real HTTP at
``http://127.0.0.1:<port>/v1``. One server is shared by a whole test session;
each test installs its own *scenario* through an admin endpoint.

HTTP surface
============
``POST /v1/chat/completions``
    OpenAI chat completions, ``stream`` false (JSON) or true (SSE
    ``data: {...}`` chunks ending with ``data: [DONE]``; a final usage chunk
    with empty ``choices`` when ``stream_options.include_usage`` is set).
    Text is streamed word by word; tool calls are streamed as deltas (first
    chunk carries index/id/name, arguments follow in pieces). Every reply
    carries ``usage``; unless a turn overrides it, prompt tokens are estimated
    as ``len(json(messages + tools)) // 4`` and completion tokens as
    ``max(1, len(output) // 4)``.
``GET /v1/models``
    A minimal model list.
``POST /_scenario``
    Body is a scenario (below). Replaces the current one, clears the request
    log and the ``error_times`` counters. Answers 400 on a malformed scenario.
``GET /_requests``
    The request log: one entry per chat-completions request, in arrival order::

        {"agent": str | None, "turn": int, "status": int, "stream": bool,
         "auth_present": bool, "body_chars": int, "body": dict | None,
         "disconnected": bool, "in_flight": int}

    ``agent`` is the scripted agent that answered (None when ``default`` did).
    ``body_chars`` is the size of the raw request body in bytes as received;
    ``body`` is the parsed JSON. The ``Authorization`` header is recorded only
    as ``auth_present``; the key itself is never stored (an error reply may
    echo it, see ``{api_key}`` below). ``disconnected`` is true when the client
    closed the connection while the reply was held back by ``delay_s`` (the
    request was aborted; nothing is sent). ``in_flight`` is how many other
    chat-completions requests were being answered when this one arrived (a
    streamed reply counts until its last chunk is sent).
``POST /_reset``
    Drops the scenario, the log and the counters.
``GET /_health``
    ``{"ok": true}``.

Scenario format
===============
::

    {
      "agents": [
        {"name": "orchestrator", "turns": [TURN, ...], "repeat_last": false},
        ...
      ],
      "default": TURN,         # optional
      "quirks": QUIRKS         # optional: behave like a real server measured in docs/local-models.md
    }

QUIRKS (every key optional; they apply to every reply of the scenario)::

    tool_calls_as: str            write each turn's tool calls into the text instead of
                                  ``tool_calls``, finish_reason "stop", as llama-server
                                  does: "fenced_json" (a ```json block per call),
                                  "tool_call_tags" (Hermes/Qwen <tool_call> tags),
                                  "json_lines" (bare objects, one per line) or
                                  "echoed_schema" (the tool's schema echoed with the
                                  arguments filled in, stray closing brace included)
    think: str                    every reply opens with "<think>THINK</think>" (streamed
                                  in 3-character pieces, so tags split across chunks)
                                  and carries the same text as ``reasoning_content``
    reject_null_content: bool     answer HTTP 500 to a request holding an assistant
                                  message with ``content: null`` (llama_cpp.server)
    no_stream_usage: bool         never send the final usage chunk of a stream
    repeat_stream_names: bool     every streamed tool-call delta repeats the call's id and
                                  name (llama_cpp.server)

*Agent selection*: the agent whose ``name`` is the request's ``X-DRA-Agent``
header, the caller's role that the product puts on every model request
(``deep_research_agent.models.AGENT_HEADER``; the values are
``deep_research_agent.names.Role``: ``orchestrator``, ``research-subagent``,
``triage``, ``direct-answer``, ...). Prompt text plays no part, so a reworded
prompt never changes who answers. Agent names are unique within a scenario.

*Turn selection*: the turn index is the number of ``assistant`` messages
already in the request, not counting the harness's deliverable messages (named
``dra_deliverable``: a delivered report or questions the harness wrote out for
the user, which stand for no reply of the model's). This keeps parallel conversations of the same agent
(e.g. concurrent sub-agents) deterministic: each one sees only its own history.
Once an agent's turns are exhausted, ``repeat_last: true`` reuses the last turn
forever; otherwise ``default`` answers. A request whose header names no
scripted agent (or that has none) is answered by ``default`` too. If there is
no ``default`` either, the request gets HTTP 500 with an error naming the role
it came with, the scripted agents and the head of its system prompt (or the
exhausted agent), so a broken test is obvious rather than hanging.

TURN (every key optional)::

    content: str                  assistant text
    tool_calls: [{"name": str, "args": {...}}, ...]   ids are generated;
                                  several entries = parallel tool calls
    finish_reason: str            override ("length", ...); the default is
                                  "tool_calls" with tool calls, else "stop"
    usage: {"prompt_tokens": int, "completion_tokens": int,
            "cached_tokens": int, "cost": float}
                                  override (cached_tokens goes to
                                  usage.prompt_tokens_details.cached_tokens;
                                  cost is reported as usage.cost, the way
                                  OpenRouter reports a call's charge)
    error: {"status": int, "message": str, "retry_after": float,
            "type": str, "code": str}
                                  reply with that status and an OpenAI-style
                                  {"error": {"message", "type", "code"}} body;
                                  Retry-After (and retry-after-ms) headers when
                                  retry_after is given; ``{api_key}`` in the
                                  message becomes the bearer token the request
                                  carried, the way providers echo a rejected key
    error_times: int              return `error` only for the first N requests
                                  landing on this (agent, turn index); later
                                  ones get the normal reply of the turn
    delay_s: float                sleep (asynchronously) before replying; a client that
                                  closes the connection meanwhile is logged as
                                  ``disconnected`` and gets no reply
    blank_times: int              the first N requests landing on this (agent, turn
                                  index) get a reply with no content and no tool
                                  calls (an empty reply); later ones get the turn
    blank_finish_reason: str      the blank reply's finish_reason ("stop" unless set;
                                  "length" for a reply cut off at the output cap)
    echo_last_tool_result: bool   make the reply quote the last tool result:
                                  content defaults to "{last_tool_result}", and
                                  the result is appended if content lacks it
    judge: {"verdicts": {str: str}, "default": str, "reason": str}
                                  answer a claim-judge prompt (the product's
                                  ``report/judge.py`` format: "P1 (source [1]): ..."
                                  and "C1 (cites [1]; its passages: P1, P2): ..."
                                  lines in the last user message) as a judge that
                                  reads: each claim gets the verdict of the first
                                  ``verdicts`` key its text contains, else ``default``
                                  ("supported" unless set), the one of its passages
                                  sharing most words with it, and that passage's
                                  text as its reason (or ``reason`` when given);
                                  the JSON is the reply's content

Placeholders ``{last_tool_result}`` (text of the last ``tool`` message) and
``{last_user}`` (text of the last user message the harness did not write: a message named
``dra_harness``, such as a research unit's "Start with a `web_search` call.", is skipped, so
``{last_user}`` stays the unit's brief) and ``{last_harness}`` (text of the last message the harness
wrote, for a model that copies a guard's warning) are replaced in ``content`` and in every string
inside tool-call ``args``, recursively. Replacement is plain
substring replacement, so other braces are left alone.

Python API
==========
``ScriptedModelServer`` runs the app with uvicorn in a background thread on a
port picked by the OS (``start``/``stop``, ``port``, ``base_url``,
``set_scenario``, ``requests``, ``reset``; usable as a context manager).
``turn``, ``call``, ``error``, ``agent`` and ``scenario`` build scenario dicts.
``python -m testkit.scripted_model --port N [--scenario file.json]``
runs it standalone and prints the base URL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from deep_research_agent.domain.conversation import DELIVERABLE_MESSAGE_NAME, HARNESS_MESSAGE_NAME
from deep_research_agent.modelcalls.models import AGENT_HEADER
from testkit.loopback import LoopbackServer

__all__ = [
    "ScenarioError",
    "ScriptedModelServer",
    "agent",
    "build_app",
    "call",
    "error",
    "scenario",
    "turn",
    "validate_scenario",
]

Json = dict[str, Any]

_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "unprocessable_entity_error",
    429: "rate_limit_error",
}

_AGENT_KEYS = frozenset({"name", "turns", "repeat_last"})
_QUIRK_KEYS = frozenset({"tool_calls_as", "think", "reject_null_content", "no_stream_usage", "repeat_stream_names"})
TEXT_TOOL_CALL_FORMATS = ("fenced_json", "tool_call_tags", "json_lines", "echoed_schema")
_TURN_KEYS = frozenset(
    {
        "content",
        "tool_calls",
        "finish_reason",
        "usage",
        "error",
        "error_times",
        "delay_s",
        "blank_times",
        "blank_finish_reason",
        "echo_last_tool_result",
        "judge",
    }
)


# --------------------------------------------------------------------------
# Scenario builders
# --------------------------------------------------------------------------


def call(name: str, /, **args: Any) -> Json:
    """A scripted tool call: ``call("web_search", query="x")``."""
    return {"name": name, "args": args}


def error(status: int, message: str, *, retry_after: float | None = None) -> Json:
    """A scripted provider error for ``turn(error=...)``."""
    out: Json = {"status": status, "message": message}
    if retry_after is not None:
        out["retry_after"] = retry_after
    return out


def turn(
    content: str | None = None,
    *,
    tool_calls: list[Json] | None = None,
    finish_reason: str | None = None,
    usage: Mapping[str, float] | None = None,
    error: Json | None = None,
    error_times: int | None = None,
    delay_s: float | None = None,
    blank_times: int | None = None,
    blank_finish_reason: str | None = None,
    echo_last_tool_result: bool = False,
    judge: Json | None = None,
) -> Json:
    """One scripted assistant reply; unset options are left out."""
    out: Json = {}
    if content is not None:
        out["content"] = content
    if tool_calls:
        out["tool_calls"] = list(tool_calls)
    if finish_reason is not None:
        out["finish_reason"] = finish_reason
    if usage is not None:
        out["usage"] = dict(usage)
    if error is not None:
        out["error"] = error
    if error_times is not None:
        out["error_times"] = error_times
    if delay_s is not None:
        out["delay_s"] = delay_s
    if blank_times is not None:
        out["blank_times"] = blank_times
    if blank_finish_reason is not None:
        out["blank_finish_reason"] = blank_finish_reason
    if echo_last_tool_result:
        out["echo_last_tool_result"] = True
    if judge is not None:
        out["judge"] = dict(judge)
    return out


def agent(name: str, *turns: Json, repeat_last: bool = False) -> Json:
    """The agent that answers the requests naming ``name`` (a role) in their ``X-DRA-Agent`` header with ``turns``."""
    out: Json = {"name": str(name), "turns": list(turns)}
    if repeat_last:
        out["repeat_last"] = True
    return out


def scenario(*agents: Json, default: Json | None = None, quirks: Mapping[str, Any] | None = None) -> Json:
    """A full scenario; ``default`` answers unmatched or exhausted requests; ``quirks`` make the server behave
    like a real one (see QUIRKS above)."""
    out: Json = {"agents": list(agents)}
    if default is not None:
        out["default"] = default
    if quirks:
        out["quirks"] = dict(quirks)
    return out


# --------------------------------------------------------------------------
# Scenario validation
# --------------------------------------------------------------------------


class ScenarioError(ValueError):
    """A scenario that does not follow the documented format."""


def _validate_turn(t: Any, where: str) -> None:
    if not isinstance(t, dict):
        raise ScenarioError(f"{where}: a turn must be an object, got {type(t).__name__}")
    unknown = set(t) - _TURN_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown turn keys {sorted(unknown)}")
    if "content" in t and not isinstance(t["content"], str):
        raise ScenarioError(f"{where}: content must be a string")
    for i, tc in enumerate(t.get("tool_calls") or []):
        if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
            raise ScenarioError(f"{where}: tool_calls[{i}] needs a string 'name'")
        if not isinstance(tc.get("args", {}), dict):
            raise ScenarioError(f"{where}: tool_calls[{i}].args must be an object")
    err = t.get("error")
    if err is not None and not (isinstance(err, dict) and isinstance(err.get("status"), int)):
        raise ScenarioError(f"{where}: error needs an integer 'status'")
    if "error_times" in t and "error" not in t:
        raise ScenarioError(f"{where}: error_times without error")
    if "judge" in t and not isinstance(t["judge"], dict):
        raise ScenarioError(f"{where}: judge must be an object")


def validate_scenario(sc: Any) -> Json:
    """Check ``sc`` against the scenario format and return it."""
    if not isinstance(sc, dict):
        raise ScenarioError("scenario must be a JSON object")
    unknown = set(sc) - {"agents", "default", "quirks"}
    if unknown:
        raise ScenarioError(f"unknown scenario keys {sorted(unknown)}")
    quirks = sc.get("quirks") or {}
    if not isinstance(quirks, dict) or set(quirks) - _QUIRK_KEYS:
        raise ScenarioError(f"quirks must be an object with keys among {sorted(_QUIRK_KEYS)}")
    if "tool_calls_as" in quirks and quirks["tool_calls_as"] not in TEXT_TOOL_CALL_FORMATS:
        raise ScenarioError(f"quirks.tool_calls_as must be one of {TEXT_TOOL_CALL_FORMATS}")
    agents = sc.get("agents", [])
    if not isinstance(agents, list):
        raise ScenarioError("'agents' must be a list")
    names: set[str] = set()
    for i, a in enumerate(agents):
        if not isinstance(a, dict):
            raise ScenarioError(f"agents[{i}] must be an object")
        unknown = set(a) - _AGENT_KEYS
        if unknown:
            raise ScenarioError(f"agents[{i}]: unknown agent keys {sorted(unknown)}")
        if not isinstance(a.get("name"), str):
            raise ScenarioError(f"agents[{i}] needs a string 'name'")
        if a["name"] in names:
            raise ScenarioError(f"agents[{i}]: a second agent named {a['name']!r} would never answer")
        names.add(a["name"])
        if not isinstance(a.get("turns", []), list):
            raise ScenarioError(f"agents[{i}].turns must be a list")
        for j, t in enumerate(a.get("turns", [])):
            _validate_turn(t, f"agent {a['name']!r} turn {j}")
    if sc.get("default") is not None:
        _validate_turn(sc["default"], "default")
    return sc


# --------------------------------------------------------------------------
# Request inspection
# --------------------------------------------------------------------------


def _text(content: Any) -> str:
    """Flatten message content (string or list of parts) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def _messages(body: Json) -> list[Json]:
    msgs = body.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def _system_prompt(messages: list[Json]) -> str:
    """All ``system``/``developer`` messages joined, to show in an error which request went unanswered."""
    return "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))


def _last_text(messages: list[Json], role: str) -> str:
    for m in reversed(messages):
        if m.get("role") == role:
            return _text(m.get("content"))
    return ""


def _substitute(value: Any, subs: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for placeholder, replacement in subs.items():
            value = value.replace(placeholder, replacement)
        return value
    if isinstance(value, list):
        return [_substitute(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, subs) for k, v in value.items()}
    return value


def _error_body(status: int, message: str, *, type_: str | None = None, code: str | None = None) -> Json:
    default_type = "server_error" if status >= 500 else _ERROR_TYPES.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": type_ or default_type, "code": code}}


# --------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Resolved:
    """Who answers a request and with which turn; ``problem`` explains a missing turn."""

    agent: str | None
    turn_index: int
    turn: Json | None
    problem: str | None


class _ScriptState:
    # All mutation happens on the server's event loop thread (admin calls go
    # over HTTP too), and counters are bumped before any await, so no lock is
    # needed and concurrent requests see a deterministic order.
    def __init__(self) -> None:
        self.scenario: Json = {"agents": []}
        self.log: list[Json] = []
        self.error_counts: dict[tuple[str | None, int], int] = {}
        self.blank_counts: dict[tuple[str | None, int], int] = {}
        self.in_flight = 0

    def install(self, sc: Json) -> None:
        self.scenario = sc
        self.log = []
        self.error_counts = {}
        self.blank_counts = {}

    def resolve(self, role: str | None, messages: list[Json]) -> _Resolved:
        """The turn that answers a request from ``role`` (its ``X-DRA-Agent`` header) with ``messages``."""
        turn_index = sum(
            1 for m in messages if m.get("role") == "assistant" and m.get("name") != DELIVERABLE_MESSAGE_NAME
        )
        default = self.scenario.get("default")
        agents = self.scenario.get("agents", [])
        for a in agents:
            if a["name"] != role:
                continue
            turns: list[Json] = a.get("turns", [])
            if turn_index < len(turns):
                return _Resolved(a["name"], turn_index, turns[turn_index], None)
            if a.get("repeat_last") and turns:
                return _Resolved(a["name"], turn_index, turns[-1], None)
            if default is not None:
                return _Resolved(a["name"], turn_index, default, None)
            return _Resolved(
                a["name"],
                turn_index,
                None,
                f"scripted model: agent {a['name']!r} has no turn {turn_index} "
                f"(scripted {len(turns)}) and the scenario has no default turn",
            )
        if default is not None:
            return _Resolved(None, turn_index, default, None)
        came_with = f"its {AGENT_HEADER} header is {role!r}" if role is not None else f"it has no {AGENT_HEADER} header"
        head = _system_prompt(messages)[:200].replace("\n", " ")
        return _Resolved(
            None,
            turn_index,
            None,
            f"scripted model: no agent answers this request and the scenario has no default turn: {came_with}, "
            f"the scenario scripts {[a['name'] for a in agents]}; system prompt starts with: {head!r}",
        )

    def should_error(self, resolved: _Resolved) -> bool:
        t = resolved.turn or {}
        if "error" not in t:
            return False
        limit = t.get("error_times")
        if limit is None:
            return True
        key = (resolved.agent, resolved.turn_index)
        seen = self.error_counts.get(key, 0)
        self.error_counts[key] = seen + 1
        return seen < limit

    def should_blank(self, resolved: _Resolved) -> bool:
        limit = (resolved.turn or {}).get("blank_times")
        if not limit:
            return False
        key = (resolved.agent, resolved.turn_index)
        seen = self.blank_counts.get(key, 0)
        self.blank_counts[key] = seen + 1
        return seen < limit


def _usage(body: Json, output: str, override: Mapping[str, Any] | None) -> Json:
    override = override or {}
    estimate_src = json.dumps({"messages": body.get("messages", []), "tools": body.get("tools", [])})
    prompt = int(override.get("prompt_tokens", len(estimate_src) // 4))
    completion = int(override.get("completion_tokens", max(1, len(output) // 4)))
    usage: Json = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if "cached_tokens" in override:
        usage["prompt_tokens_details"] = {"cached_tokens": int(override["cached_tokens"])}
    if "cost" in override:
        usage["cost"] = float(override["cost"])
    return usage


_JUDGE_PASSAGE_RE = re.compile(r"^(P\d+) \(source \[\d+\]\): (.*)$", re.M)
_JUDGE_CLAIM_RE = re.compile(r"^(C\d+) \(cites [^;]*; its passages: ([^)]*)\): (.*)$", re.M)
_WORD_RE = re.compile(r"[a-z0-9]{3,}")


def _judged(judge: Json, prompt: str) -> str:
    """The ``judge`` turn's answer to a claim-judge prompt (see TURN above)."""
    passages = dict(_JUDGE_PASSAGE_RE.findall(prompt))
    verdicts = []
    for claim_id, listed, text in _JUDGE_CLAIM_RE.findall(prompt):
        verdict = next((v for key, v in (judge.get("verdicts") or {}).items() if key in text), None)
        words = set(_WORD_RE.findall(text.lower()))
        own = [p.strip() for p in listed.split(",") if p.strip() in passages]
        passage = max(own, key=lambda p: len(words & set(_WORD_RE.findall(passages[p].lower()))), default="P1")
        reason = judge.get("reason", passages.get(passage, ""))
        verdicts.append(
            {
                "claim": claim_id,
                "verdict": verdict or judge.get("default", "supported"),
                "passage": passage,
                "reason": reason,
            }
        )
    return json.dumps({"verdicts": verdicts})


def _render_turn(t: Json, messages: list[Json]) -> tuple[str | None, list[Json]]:
    """Return the reply text and OpenAI-shaped tool calls for a turn."""
    last_tool = _last_text(messages, "tool")
    users = [m for m in messages if m.get("name") != HARNESS_MESSAGE_NAME]
    harness = [m for m in messages if m.get("name") == HARNESS_MESSAGE_NAME]
    subs = {
        "{last_tool_result}": last_tool,
        "{last_user}": _last_text(users, "user"),
        "{last_harness}": _last_text(harness, "user"),
    }
    content: str | None = t.get("content")
    if t.get("judge") is not None:
        content = _judged(t["judge"], _last_text(users, "user"))
    if t.get("echo_last_tool_result"):
        if content is None:
            content = "{last_tool_result}"
        elif "{last_tool_result}" not in content:
            content = f"{content}\n\n{{last_tool_result}}"
    if content is not None:
        content = _substitute(content, subs)
    tool_calls = [
        {
            "id": f"call_{secrets.token_hex(12)}",
            "type": "function",
            "function": {
                "name": tc["name"],
                "arguments": json.dumps(_substitute(tc.get("args", {}), subs)),
            },
        }
        for tc in t.get("tool_calls") or []
    ]
    return content, tool_calls


def _as_text_calls(tool_calls: list[Json], fmt: str) -> str:
    """The tool calls written as text, the way llama-server's models wrote them."""
    parts = []
    for tc in tool_calls:
        name, args = tc["function"]["name"], json.loads(tc["function"]["arguments"])
        if fmt == "echoed_schema":
            parts.append(
                json.dumps({"name": name, "description": f"The {name} tool.", "parameters": args})[:-1]
                + f', "required": {json.dumps(sorted(args))}, "type": "object"}}}}'
            )
            continue
        call_json = json.dumps({"name": name, "arguments": args})
        if fmt == "fenced_json":
            parts.append(f"```json\n{call_json}\n```")
        elif fmt == "tool_call_tags":
            parts.append(f"<tool_call>\n{call_json}\n</tool_call>")
        else:
            parts.append(call_json)
    return "\n".join(parts)


def _apply_quirks(quirks: Json, content: str | None, tool_calls: list[Json]) -> tuple[str | None, list[Json]]:
    """The reply as a quirky server sends it: tool calls as text, a think block first."""
    fmt = quirks.get("tool_calls_as")
    if fmt and tool_calls:
        content = "\n".join(part for part in (content, _as_text_calls(tool_calls, fmt)) if part)
        tool_calls = []
    if quirks.get("think"):
        content = f"<think>{quirks['think']}</think>{content or ''}"
    return content, tool_calls


def _has_null_assistant_content(messages: list[Json]) -> bool:
    return any(m.get("role") == "assistant" and "content" in m and m["content"] is None for m in messages)


def _word_chunks(text: str) -> list[str]:
    # Split at whitespace→word boundaries so the pieces concatenate back to
    # exactly the original text, whitespace included.
    return [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]


def _argument_pieces(arguments: str) -> list[str]:
    # Real providers split arguments arbitrarily; three pieces is enough to
    # exercise the client's reassembly without bloating the stream.
    if len(arguments) < 6:
        return [arguments]
    a, b = len(arguments) // 3, 2 * len(arguments) // 3
    return [arguments[:a], arguments[a:b], arguments[b:]]


async def _sse(
    *,
    completion_id: str,
    created: int,
    model: str,
    content: str | None,
    tool_calls: list[Json],
    finish_reason: str,
    usage: Json,
    include_usage: bool,
    reasoning: str | None = None,
    repeat_names: bool = False,
) -> AsyncIterator[bytes]:
    def chunk(delta: Json, finish: str | None = None) -> bytes:
        payload: Json = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            payload["usage"] = None
        return f"data: {json.dumps(payload)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    if reasoning:
        yield chunk({"reasoning_content": reasoning})
    text = content or ""
    if reasoning and text.startswith("<think>"):
        # The think block goes out in 3-character pieces, so its tags arrive split across chunks.
        end = text.index("</think>") + len("</think>")
        for i in range(0, end, 3):
            yield chunk({"content": text[i : min(i + 3, end)]})
        text = text[end:]
    for piece in _word_chunks(text):
        yield chunk({"content": piece})
        # Yield control so the chunks really leave as separate writes.
        await asyncio.sleep(0)
    for index, tc in enumerate(tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": tc["id"],
                        "type": "function",
                        "function": {"name": tc["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _argument_pieces(tc["function"]["arguments"]):
            delta: Json = {"index": index, "function": {"arguments": piece}}
            if repeat_names:
                delta = {
                    "index": index,
                    "id": tc["id"],
                    "type": "function",
                    "function": {"name": tc["function"]["name"], "arguments": piece},
                }
            yield chunk({"tool_calls": [delta]})
            await asyncio.sleep(0)
    yield chunk({}, finish_reason)
    if include_usage:
        final: Json = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
            "choices": [],
            "usage": usage,
        }
        yield f"data: {json.dumps(final)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def build_app() -> Starlette:
    """The Starlette app; state lives in the app instance."""
    state = _ScriptState()

    async def chat_completions(request: Request) -> Response:
        state.in_flight += 1
        try:
            response = await answer(request)
        except BaseException:
            state.in_flight -= 1
            raise
        if isinstance(response, StreamingResponse):
            response.body_iterator = counted(response.body_iterator)
        else:
            state.in_flight -= 1
        return response

    async def counted(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            state.in_flight -= 1

    async def answer(request: Request) -> Response:
        raw = await request.body()
        entry: Json = {
            "agent": None,
            "turn": 0,
            "status": 200,
            "stream": False,
            "auth_present": bool(request.headers.get("authorization")),
            "body_chars": len(raw),
            "body": None,
            "disconnected": False,
            "in_flight": state.in_flight - 1,
        }
        state.log.append(entry)
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            entry["status"] = 400
            return JSONResponse(_error_body(400, f"scripted model: invalid JSON body: {exc}"), status_code=400)

        messages = _messages(body)
        stream = bool(body.get("stream"))
        resolved = state.resolve(request.headers.get(AGENT_HEADER), messages)
        entry.update(body=body, stream=stream, agent=resolved.agent, turn=resolved.turn_index)

        if resolved.turn is None:
            entry["status"] = 500
            return JSONResponse(
                _error_body(500, resolved.problem or "scripted model: unresolved", code="unmatched_request"),
                status_code=500,
            )
        t = resolved.turn
        failing = state.should_error(resolved)
        if failing:
            entry["status"] = int(t["error"]["status"])

        blank = state.should_blank(resolved)
        if t.get("delay_s"):
            deadline = time.monotonic() + float(t["delay_s"])
            while time.monotonic() < deadline:
                if await request.is_disconnected():
                    entry["disconnected"] = True
                    return Response(status_code=499)
                await asyncio.sleep(min(0.05, max(deadline - time.monotonic(), 0)))

        if failing:
            err: Json = t["error"]
            status = int(err["status"])
            headers: dict[str, str] = {}
            if err.get("retry_after") is not None:
                retry_after = float(err["retry_after"])
                headers["retry-after"] = f"{retry_after:g}"
                # The openai client prefers the millisecond header, which
                # keeps sub-second retries in tests precise.
                headers["retry-after-ms"] = str(int(retry_after * 1000))
            api_key = request.headers.get("authorization", "").removeprefix("Bearer ")
            body_out = _error_body(
                status,
                str(err.get("message", f"scripted error {status}")).replace("{api_key}", api_key),
                type_=err.get("type"),
                code=err.get("code"),
            )
            return JSONResponse(body_out, status_code=status, headers=headers)

        quirks: Json = state.scenario.get("quirks") or {}
        if quirks.get("reject_null_content") and _has_null_assistant_content(messages):
            entry["status"] = 500
            return JSONResponse(
                _error_body(500, "scripted model: an assistant message has content null", code="null_content"),
                status_code=500,
            )
        content, tool_calls = _render_turn(t, messages)
        content, tool_calls = _apply_quirks(quirks, content, tool_calls)
        if blank:
            content, tool_calls = "", []
        output = (content or "") + "".join(tc["function"]["name"] + tc["function"]["arguments"] for tc in tool_calls)
        usage = _usage(body, output, t.get("usage"))
        finish_reason = t.get("finish_reason") or ("tool_calls" if tool_calls else "stop")
        if blank:
            finish_reason = t.get("blank_finish_reason") or "stop"
        completion_id = f"chatcmpl-{secrets.token_hex(12)}"
        created = int(time.time())
        model = str(body.get("model") or "scripted-model")

        if stream:
            stream_options = body.get("stream_options") or {}
            return StreamingResponse(
                _sse(
                    completion_id=completion_id,
                    created=created,
                    model=model,
                    content=content,
                    tool_calls=tool_calls,
                    finish_reason=finish_reason,
                    usage=usage,
                    include_usage=bool(stream_options.get("include_usage")) and not quirks.get("no_stream_usage"),
                    reasoning=quirks.get("think"),
                    repeat_names=bool(quirks.get("repeat_stream_names")),
                ),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )

        message: Json = {"role": "assistant", "content": content, "refusal": None}
        if quirks.get("think"):
            message["reasoning_content"] = quirks["think"]
        if tool_calls:
            message["tool_calls"] = tool_calls
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
                "usage": usage,
            }
        )

    async def models(_: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": "scripted-model", "object": "model", "created": 0, "owned_by": "tests"}],
            }
        )

    async def set_scenario(request: Request) -> Response:
        try:
            sc = validate_scenario(json.loads(await request.body()))
        except (ValueError, ScenarioError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        state.install(sc)
        return JSONResponse({"ok": True})

    async def get_requests(_: Request) -> Response:
        return JSONResponse(state.log)

    async def reset(_: Request) -> Response:
        state.install({"agents": []})
        return JSONResponse({"ok": True})

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/_scenario", set_scenario, methods=["POST"]),
            Route("/_requests", get_requests, methods=["GET"]),
            Route("/_reset", reset, methods=["POST"]),
            Route("/_health", health, methods=["GET"]),
        ]
    )


# --------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------


class ScriptedModelServer(LoopbackServer):
    """Runs the scripted model with uvicorn in a background thread (``port=0`` lets the OS pick)."""

    label = "scripted model server"

    def build(self) -> Starlette:
        return build_app()

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def set_scenario(self, sc: Mapping[str, Any]) -> None:
        """Install a scenario; raises ``ScenarioError`` if the server rejects it."""
        resp = self._admin().post("/_scenario", json=sc)
        if resp.status_code == 400:
            raise ScenarioError(resp.json().get("error", resp.text))
        resp.raise_for_status()

    def requests(self) -> list[Json]:
        """The request log since the last scenario/reset."""
        resp = self._admin().get("/_requests")
        resp.raise_for_status()
        return resp.json()

    def reset(self) -> None:
        self._admin().post("/_reset").raise_for_status()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible chat-completions server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--scenario", help="JSON file with a scenario to install at start")
    args = parser.parse_args(argv)

    stop = threading.Event()
    # Handle both explicitly: a backgrounded process inherits SIGINT as ignored,
    # and benchmark harnesses usually stop it with SIGTERM.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    server = ScriptedModelServer(args.host, args.port).start()
    try:
        if args.scenario:
            with open(args.scenario, encoding="utf-8") as fh:
                server.set_scenario(json.load(fh))
        print(server.base_url, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
