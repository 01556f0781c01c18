"""The thin layer in front of the cron engine's API: bad schedules are refused before the engine sees them.

Why a layer and not the engine: neither engine knows this product's rules (a minimum interval, a per-user
cap, a task to continue, the run URL policy for webhooks), and the engines' own hook for such checks (an
``@auth.on.crons`` handler) runs only on a server with auth, which ``langgraph dev`` usually is not. Both
servers mount the product's HTTP app around their whole API (``langgraph.json``/``aegra.json`` ``http.app``),
so one ASGI middleware there sees every cron request however it was sent: ``./run.sh schedule``, the web UI,
or any SDK client.

Contract (``ScheduleGuard(app, settings=ScheduleSettings(...), defer_first_run=False)``):
- ``POST /runs/crons`` (``client.crons.create``) is a schedule: its ``config.configurable.task`` must name a
  task (1-100 characters), its input must be one non-empty user message, its cron must pass
  ``spec.cron_problem`` (five fields, a known timezone, no two runs closer than
  ``schedule_min_interval_s``), its webhook (if any) ``policy.webhook_refusal``; the caller must not have a
  schedule of that name (409) nor ``schedule_max_per_user`` of them already (422). Every refusal is a JSON
  ``{"detail": ...}`` that says what to fix, and nothing reaches the engine, so nothing is half-created;
- a schedule let through is completed before the engine stores it: metadata ``schedule`` and ``user_id``,
  configurable ``schedule`` (the graph's mark of a scheduled run), ``task``, ``user_id``, ``clarify:
  false`` (nobody answers a scheduled run's questions) and ``plan_review: false`` unless the schedule's
  config asks for it (the server's ``DRA_PLAN_REVIEW`` does not make scheduled runs wait), and
  ``on_run_completed: keep`` (each run's thread is its digest);
- ``defer_first_run`` (Aegra, whose create starts a first run at once, where langgraph-api waits for the
  cron's first time): the cron is created paused and then resumed, so it first runs when its cron says on
  both servers; a resume that fails deletes the cron again;
- ``POST /threads/{thread_id}/runs/crons`` is refused: a schedule's runs each start a thread of their own;
- ``PATCH /runs/crons/{cron_id}`` of the caller's schedule is checked the same way for what it changes
  (cron, timezone, webhook, question) and keeps the schedule's marks: a changed config or metadata is
  completed again, and its task cannot change;
- a run created with a ``webhook`` (``/runs``, ``/threads/{id}/runs`` and their ``stream``/``wait`` forms,
  ``/runs/batch``) is held to the same webhook policy.
The caller's existing schedules are read back through the server's own API with the caller's credentials
(``service/caller.py``), so the engine's auth decides whose they are (``spec.belongs_to``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..domain.knobs import KnobError
from ..run.owner import ANONYMOUS_USER
from ..service.caller import caller_client
from ..settings.features import ScheduleSettings
from ..tasks.store import TaskNameError, task_of
from .policy import webhook_refusal
from .spec import (
    SCHEDULE_KEY,
    TASK_KEY,
    USER_KEY,
    all_crons,
    belongs_to,
    cron_problem,
    is_schedule,
    schedule_name,
    timezone_problem,
)

_CREATE = re.compile(r"^/runs/crons/?$")
_THREAD_CREATE = re.compile(r"^/threads/[^/]+/runs/crons/?$")
_PATCH = re.compile(r"^/runs/crons/(?P<cron_id>[^/]+)/?$")
_RUN_CREATE = re.compile(r"^(/threads/[^/]+)?/runs(/stream|/wait|/batch)?/?$")


class Refused(Exception):
    def __init__(self, detail: str, status: int = 422) -> None:
        super().__init__(detail)
        self.detail, self.status = detail, status


class ScheduleGuard:
    """Refuses bad schedules before the cron engine sees them, and completes good ones (see the contract)."""

    def __init__(self, app: ASGIApp, *, settings: ScheduleSettings, defer_first_run: bool = False) -> None:
        if not isinstance(settings, ScheduleSettings):
            raise KnobError(type(self).__name__, "settings", settings, "a ScheduleSettings")
        self.app = app
        self.settings = settings
        self.defer_first_run = bool(defer_first_run)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PATCH"):
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        if scope["method"] == "PATCH":
            handler: Callable[..., Awaitable[None]] | None = self._patch if _PATCH.match(path) else None
        elif _CREATE.match(path):
            handler = self._create
        elif _THREAD_CREATE.match(path):
            handler = self._thread_create
        elif _RUN_CREATE.match(path):
            handler = self._run_create
        else:
            handler = None
        if handler is None:
            await self.app(scope, receive, send)
            return
        raw = await _read_body(receive)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if body is None:  # not JSON: the engine answers it
            await self.app(scope, _replaying(raw, receive), send)
            return
        try:
            await handler(scope, receive, send, body, path)
        except Refused as refusal:
            await JSONResponse({"detail": refusal.detail}, status_code=refusal.status)(scope, receive, send)

    # --- creating a schedule --------------------------------------------------------------------------

    async def _create(self, scope: Scope, receive: Receive, send: Send, body: Any, _path: str) -> None:
        if not isinstance(body, dict):
            raise Refused("A schedule is a JSON object: the body of client.crons.create.")
        name = _task_name(body.get("config"))
        question = _question(body.get("input"))
        if problem := cron_problem(str(body.get("schedule") or ""), body.get("timezone"), self._min_interval):
            raise Refused(problem)
        await self._check_webhook(body.get("webhook"))
        user = _named_user(body)
        client = caller_client(Request(scope))
        try:
            mine = [c for c in await all_crons(client) if is_schedule(c) and belongs_to(c, user)]
            if any(schedule_name(c) == name for c in mine):
                raise Refused(
                    f"There is already a schedule named {name!r}: pick another name, or change that one "
                    "(./run.sh schedule remove, then add).",
                    409,
                )
            cap = self.settings.schedule_max_per_user
            if cap and len(mine) >= cap:
                raise Refused(
                    f"You have {len(mine)} schedules and this server allows {cap} per user "
                    "(DRA_SCHEDULE_MAX_PER_USER): remove one first."
                )
            completed = _completed(body, name=name, user=user, question=question)
            if self.defer_first_run and completed.get("enabled", True) is not False:
                await self._create_paused_then_resume(scope, receive, send, client, completed)
            else:
                await self.app(_with_body_length(scope, completed), _replaying(_dump(completed), receive), send)
        finally:
            await client.aclose()

    async def _create_paused_then_resume(
        self, scope: Scope, receive: Receive, send: Send, client: Any, body: dict[str, Any]
    ) -> None:
        """Create the cron paused (no run at once), then resume it; a resume that fails deletes it again."""
        status, answer = await _answered(self.app, scope, body | {"enabled": False}, receive)
        if status >= 300 or not isinstance(answer, dict) or not answer.get("cron_id"):
            await JSONResponse(answer, status_code=status)(scope, receive, send)
            return
        try:
            resumed = await client.crons.update(str(answer["cron_id"]), enabled=True)
        except Exception:  # noqa: BLE001 - whatever stopped the resume, the paused cron must not stay behind
            await client.crons.delete(str(answer["cron_id"]))
            raise Refused(
                "The schedule could not be started on this server; nothing was kept. Try again.", 502
            ) from None
        await JSONResponse(dict(resumed))(scope, receive, send)

    async def _thread_create(self, scope: Scope, receive: Receive, send: Send, body: Any, _path: str) -> None:
        raise Refused(
            "A schedule's runs each start a thread of their own: create it with POST /runs/crons "
            "(client.crons.create) and name its task in config.configurable.task."
        )

    # --- changing one -----------------------------------------------------------------------------------

    async def _patch(self, scope: Scope, receive: Receive, send: Send, body: Any, path: str) -> None:
        match = _PATCH.match(path)
        if not isinstance(body, dict) or match is None:
            await self.app(scope, _replaying(_dump(body), receive), send)
            return
        if body.get("schedule") is not None:
            if problem := cron_problem(str(body["schedule"]), body.get("timezone"), self._min_interval):
                raise Refused(problem)
        elif problem := timezone_problem(body.get("timezone")):
            raise Refused(problem)
        if "webhook" in body and body["webhook"] is not None:
            await self._check_webhook(body["webhook"])
        if "input" in body:
            _question(body["input"])
        if {"config", "metadata"} & body.keys():
            client = caller_client(Request(scope))
            try:
                found = [c for c in await all_crons(client) if str(c.get("cron_id")) == match["cron_id"]]
            finally:
                await client.aclose()
            if found and is_schedule(found[0]):
                body = _keeping_marks(body, found[0])
        await self.app(_with_body_length(scope, body), _replaying(_dump(body), receive), send)

    # --- a run's webhook ----------------------------------------------------------------------------------

    async def _run_create(self, scope: Scope, receive: Receive, send: Send, body: Any, _path: str) -> None:
        for payload in body if isinstance(body, list) else [body]:
            if isinstance(payload, dict) and payload.get("webhook") is not None:
                await self._check_webhook(payload["webhook"])
        await self.app(scope, _replaying(_dump(body), receive), send)

    async def _check_webhook(self, url: Any) -> None:
        if url is None:
            return
        if refusal := await webhook_refusal(url if isinstance(url, str) else "", self.settings.webhook_allow_hosts):
            raise Refused(refusal)

    @property
    def _min_interval(self) -> float:
        return max(self.settings.schedule_min_interval_s, 0)


def _route_path(scope: Scope) -> str:
    """The request's path below the server's mount prefix (``root_path``), as its routes match it."""
    path, root = str(scope.get("path") or ""), str(scope.get("root_path") or "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


def _task_name(config: Any) -> str:
    configurable = (config or {}).get("configurable") if isinstance(config, Mapping) else None
    try:
        name = task_of({"configurable": configurable or {}})
    except TaskNameError as exc:
        raise Refused(f"{exc}: name the schedule's task in config.configurable.task.") from None
    if name is None:
        raise Refused(
            "A schedule continues a named task: set config.configurable.task to its name "
            "(./run.sh schedule add NAME ... does)."
        )
    return name


def _question(raw: Any) -> str:
    messages = raw.get("messages") if isinstance(raw, Mapping) else None
    users = [m for m in messages or () if isinstance(m, Mapping) and m.get("role") in ("user", "human")]
    text = str(users[0].get("content") or "").strip() if len(users) == 1 else ""
    if not text or not isinstance(users[0].get("content"), str):
        raise Refused(
            'A schedule asks one question: give input as {"messages": [{"role": "user", "content": "QUESTION"}]} '
            "with a question that is not empty."
        )
    return text


def _named_user(body: Mapping[str, Any]) -> str:
    """Whom a server without auth files the schedule under: configurable or metadata ``user_id``."""
    configurable = (
        ((body.get("config") or {}).get("configurable") or {}) if isinstance(body.get("config"), Mapping) else {}
    )
    metadata = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    return str(configurable.get(USER_KEY) or (metadata or {}).get(USER_KEY) or "").strip() or ANONYMOUS_USER


def _completed(body: dict[str, Any], *, name: str, user: str, question: str) -> dict[str, Any]:
    config = dict(body.get("config") or {})
    configurable = _marked(dict(config.get("configurable") or {}), name=name, user=user)
    metadata = {**(body.get("metadata") or {}), SCHEDULE_KEY: name, USER_KEY: user}
    messages = [{"role": "user", "content": question}]
    return {
        **body,
        "input": {**body["input"], "messages": messages},
        "config": {**config, "configurable": configurable},
        "metadata": metadata,
        "on_run_completed": "keep",
    }


def _marked(configurable: dict[str, Any], *, name: str, user: str) -> dict[str, Any]:
    """A schedule's configurable: its task, its mark, its user, no clarifying questions (nobody answers them),
    and plan review off unless the schedule asks for it (``plan_review: true``: each run waits for a review)."""
    marked = {"plan_review": False, **configurable}
    return marked | {TASK_KEY: name, SCHEDULE_KEY: name, USER_KEY: user, "clarify": False}


def _keeping_marks(body: dict[str, Any], cron: Mapping[str, Any]) -> dict[str, Any]:
    """A patch of a schedule's config or metadata, completed so the schedule stays one, of the same task."""
    name = schedule_name(cron)
    metadata = dict(cron.get("metadata") or {})
    payload = cron.get("payload") or {}
    old = ((payload.get("config") or {}).get("configurable") or {}) if isinstance(payload, Mapping) else {}
    user = str(metadata.get(USER_KEY) or old.get(USER_KEY) or ANONYMOUS_USER)
    patched = dict(body)
    if "config" in body:
        config = dict(body.get("config") or {})
        configurable = dict(config.get("configurable") or {})
        if configurable.get(TASK_KEY) not in (None, name):
            raise Refused(f"A schedule's task cannot change: remove the schedule {name!r} and add a new one.")
        patched["config"] = {**config, "configurable": _marked(configurable, name=name, user=user)}
    if "metadata" in body:
        patched["metadata"] = {**(body.get("metadata") or {}), SCHEDULE_KEY: name, USER_KEY: user}
    return patched


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with ``body`` handed out first, as the request's whole body; then the client's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _dump(body: Any) -> bytes:
    return json.dumps(body).encode()


def _with_body_length(scope: Scope, body: Any) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(len(_dump(body))).encode())]}


async def _answered(app: ASGIApp, scope: Scope, body: Any, receive: Receive) -> tuple[int, Any]:
    """What ``app`` answers a request whose body is ``body``: its status and JSON (None when not JSON)."""
    scope = _with_body_length(scope, body)
    status, chunks = 500, []

    async def keep(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, _replaying(_dump(body), receive), keep)
    try:
        return status, json.loads(b"".join(chunks) or b"null")
    except ValueError:
        return status, None
