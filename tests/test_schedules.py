"""Schedules as the server holds them: the cron rules, the webhook policy, and the guard in front of the cron
engine's API, over real sockets against a stand-in of the engine that records what reached it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deep_research_agent.schedules.delivery import WEBHOOK_FIELDS
from deep_research_agent.schedules.guard import ScheduleGuard
from deep_research_agent.schedules.policy import webhook_refusal
from deep_research_agent.schedules.spec import (
    belongs_to,
    cron_body,
    cron_problem,
    question_of,
    shortest_interval_s,
)
from deep_research_agent.settings import ScheduleSettings
from testkit.loopback import LoopbackServer

HOUR = 3600
QUESTION = "What changed in sodium-ion batteries?"


# --- the cron rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cron", ["0 8 * * MON", "30 6 1 * *", "0 */2 * * *", "@daily", "0 8 * * 1-5"])
def test_a_cron_of_five_fields_no_more_often_than_the_minimum_is_accepted(cron):
    assert cron_problem(cron, "Europe/Sofia", HOUR) is None


@pytest.mark.parametrize("cron", ["every monday", "0 8 * *", "*/30 * * * * *", "61 * * * *", "", "@reboot"])
def test_anything_but_a_five_field_cron_is_refused_with_an_example(cron):
    problem = cron_problem(cron, None, 0)
    assert problem is not None and "give five fields" in problem and "'0 8 * * MON'" in problem


def test_an_unknown_timezone_is_refused_by_name():
    assert cron_problem("0 8 * * MON", "Mars/Olympus", HOUR) == (
        "Unknown timezone 'Mars/Olympus': give an IANA name such as 'Europe/Sofia' or 'UTC'."
    )


@pytest.mark.parametrize("cron, said", [("*/5 * * * *", "every 5 minutes"), ("0,30 * * * *", "every 30 minutes")])
def test_a_cron_more_frequent_than_the_minimum_says_how_often_it_would_run(cron, said):
    problem = cron_problem(cron, None, HOUR)
    assert problem is not None and said in problem and "at most every hour (DRA_SCHEDULE_MIN_INTERVAL_S)" in problem


def test_the_shortest_interval_is_the_closest_pair_of_runs_not_the_usual_one():
    # Every day at 08:00, and at 08:05 on Mondays: five minutes apart once a week.
    assert shortest_interval_s("0,5 8 * * MON", ZoneInfo("UTC")) == 300
    assert shortest_interval_s("0 8 * * MON", ZoneInfo("UTC")) == 7 * 86400
    assert cron_problem("0,5 8 * * MON", None, HOUR) is not None


def test_a_schedule_is_one_cron_whose_config_names_its_task_and_whose_runs_keep_their_threads():
    body = cron_body("sodium", QUESTION, "0 8 * * MON", user="ada", timezone="Europe/Sofia", config={"max_cost_usd": 1})
    assert body == {
        "assistant_id": "deep_research_agent",
        "schedule": "0 8 * * MON",
        "input": {"messages": [{"role": "user", "content": QUESTION}]},
        "config": {"configurable": {"max_cost_usd": 1, "task": "sodium", "user_id": "ada"}},
        "metadata": {"schedule": "sodium", "user_id": "ada"},
        "on_run_completed": "keep",
        "enabled": True,
        "timezone": "Europe/Sofia",
    }
    assert question_of({"payload": body}) == QUESTION


def test_a_cron_the_engine_stamped_with_an_owner_is_its_callers_and_one_without_is_filed_by_its_metadata():
    assert belongs_to({"user_id": "alice", "metadata": {"user_id": "anonymous"}}, "bob")
    assert belongs_to({"user_id": "", "metadata": {"user_id": "bob"}}, "bob")
    assert not belongs_to({"user_id": None, "metadata": {"user_id": "alice"}}, "bob")


# --- the webhook policy -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, said",
    [
        ("ftp://hooks.example/x", "only http and https webhook URLs are allowed"),
        ("/threads/x/runs", "only http and https webhook URLs are allowed"),
        ("", "must be an http(s) URL"),
        ("http://127.0.0.1:9/hook", "127.0.0.1 is a loopback address"),
        ("http://2130706433/hook", "loopback address"),
        ("http://10.1.2.3/hook", "10.1.2.3 is a private address"),
        ("http://169.254.169.254/latest", "a cloud metadata address"),
        ("http://[::1]/hook", "loopback address"),
    ],
)
def test_a_webhook_to_anything_but_a_public_http_address_is_refused(url, said):
    refusal = asyncio.run(webhook_refusal(url))
    assert refusal is not None and said in refusal


def test_a_host_the_operator_allows_takes_webhooks_and_a_public_address_always_does():
    assert asyncio.run(webhook_refusal("http://127.0.0.1:9/hook", ("127.0.0.1",))) is None
    assert asyncio.run(webhook_refusal("https://8.8.8.8/hook")) is None
    refused = asyncio.run(webhook_refusal("http://127.0.0.1:9/hook", ("10.1.2.3",)))
    assert refused is not None and "DRA_WEBHOOK_ALLOW_HOSTS" in refused


# --- the guard, over a stand-in of the cron engine ------------------------------------------------------------


class Engine(LoopbackServer):
    """A cron engine's API as both servers answer it, behind the guard: it keeps what reached it."""

    label = "cron engine stand-in"

    def __init__(self, settings: ScheduleSettings, *, defer_first_run: bool = False, owner: str | None = None) -> None:
        super().__init__()
        self.settings, self.defer, self.owner = settings, defer_first_run, owner
        self.crons: dict[str, dict[str, Any]] = {}
        self.runs: list[dict[str, Any]] = []
        self.updates: list[tuple[str, dict[str, Any]]] = []

    def build(self) -> Starlette:
        async def create(request: Request) -> Response:
            body = await request.json()
            cron_id = f"cron-{len(self.crons) + 1}"
            self.crons[cron_id] = {
                "cron_id": cron_id, "schedule": body["schedule"], "payload": body, "metadata": body.get("metadata") or {},
                "enabled": body.get("enabled", True), "user_id": self.owner, "next_run_date": "2026-12-07T08:00:00+00:00",
            }  # fmt: skip
            return JSONResponse(self.crons[cron_id])

        async def search(request: Request) -> Response:
            body = await request.json()
            crons = list(self.crons.values())[body.get("offset", 0) :][: body.get("limit", 10)]
            return JSONResponse(crons)

        async def patch(request: Request) -> Response:
            cron_id, body = request.path_params["cron_id"], await request.json()
            self.updates.append((cron_id, body))
            self.crons[cron_id] = {**self.crons[cron_id], **body}
            return JSONResponse(self.crons[cron_id])

        async def delete(request: Request) -> Response:
            self.crons.pop(request.path_params["cron_id"], None)
            return Response(status_code=204)

        async def run(request: Request) -> Response:
            self.runs.append(await request.json())
            return JSONResponse({"run_id": "r1"})

        async def health(_: Request) -> Response:
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[
                Route("/runs/crons", create, methods=["POST"]),
                Route("/runs/crons/search", search, methods=["POST"]),
                Route("/runs/crons/{cron_id}", patch, methods=["PATCH"]),
                Route("/runs/crons/{cron_id}", delete, methods=["DELETE"]),
                Route("/threads/{thread_id}/runs/crons", create, methods=["POST"]),
                Route("/threads/{thread_id}/runs/stream", run, methods=["POST"]),
                Route("/_health", health),
            ],
            middleware=[Middleware(ScheduleGuard, settings=self.settings, defer_first_run=self.defer)],
        )

    def post(self, path: str, body: Any) -> httpx.Response:
        return httpx.post(f"{self.root_url}{path}", content=json.dumps(body), timeout=10)


def settings(**changes: Any) -> ScheduleSettings:
    return ScheduleSettings(**{"schedule_min_interval_s": HOUR, "schedule_max_per_user": 2, **changes})


@pytest.fixture
def engine():
    with Engine(settings()) as server:
        yield server


def test_a_schedule_let_through_is_completed_so_its_runs_continue_the_task_without_asking(engine):
    answer = engine.post(
        "/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada", config={"clarify": True})
    )

    assert answer.status_code == 200
    [stored] = engine.crons.values()
    payload = stored["payload"]
    assert payload["config"]["configurable"] == {
        "task": "sodium",
        "schedule": "sodium",
        "user_id": "ada",
        "clarify": False,
        "plan_review": False,
    }
    assert payload["metadata"] == {"schedule": "sodium", "user_id": "ada"} and payload["on_run_completed"] == "keep"


def test_plan_review_stays_off_on_a_schedules_runs_unless_the_schedule_asks_for_it(engine):
    # A server with DRA_PLAN_REVIEW on would make every scheduled run wait for a review nobody gives.
    engine.post("/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada"))
    engine.post("/runs/crons", cron_body("lithium", QUESTION, "0 8 * * MON", user="ada", config={"plan_review": True}))

    reviewed = {
        c["metadata"]["schedule"]: c["payload"]["config"]["configurable"]["plan_review"] for c in engine.crons.values()
    }
    assert reviewed == {"sodium": False, "lithium": True}


@pytest.mark.parametrize(
    "change, status, said",
    [
        ({"schedule": "*/10 * * * *"}, 422, "every 10 minutes at its most frequent"),
        ({"schedule": "not a cron"}, 422, "is not a cron expression"),
        ({"timezone": "Nowhere/Town"}, 422, "Unknown timezone 'Nowhere/Town'"),
        ({"webhook": "http://192.168.1.5/hook"}, 422, "192.168.1.5 is a private address"),
        ({"config": {"configurable": {}}}, 422, "set config.configurable.task"),
        ({"config": {"configurable": {"task": "x" * 101}}}, 422, "1-100 characters"),
        ({"input": {"messages": [{"role": "user", "content": "  "}]}}, 422, "a question that is not empty"),
        ({"input": {"messages": []}}, 422, "A schedule asks one question"),
    ],
)
def test_a_bad_schedule_is_refused_with_what_to_fix_and_nothing_reaches_the_engine(engine, change, status, said):
    body = {**cron_body("sodium", QUESTION, "0 8 * * MON", user="ada"), **change}
    answer = engine.post("/runs/crons", body)
    assert answer.status_code == status and said in answer.json()["detail"]
    assert engine.crons == {}


def test_a_name_the_user_has_and_one_schedule_past_the_cap_are_refused_but_another_users_name_is_free(engine):
    assert engine.post("/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada")).status_code == 200
    again = engine.post("/runs/crons", cron_body("sodium", "Another question?", "0 9 * * *", user="ada"))
    assert again.status_code == 409 and "There is already a schedule named 'sodium'" in again.json()["detail"]
    assert engine.post("/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="bob")).status_code == 200
    assert engine.post("/runs/crons", cron_body("lithium", QUESTION, "0 8 * * MON", user="ada")).status_code == 200
    third = engine.post("/runs/crons", cron_body("cobalt", QUESTION, "0 8 * * MON", user="ada"))
    assert third.status_code == 422 and "allows 2 per user (DRA_SCHEDULE_MAX_PER_USER)" in third.json()["detail"]
    assert sorted(c["metadata"]["schedule"] for c in engine.crons.values()) == ["lithium", "sodium", "sodium"]


def test_a_thread_bound_cron_is_refused_because_each_run_needs_a_thread_of_its_own(engine):
    answer = engine.post("/threads/t-1/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada"))
    assert answer.status_code == 422 and "POST /runs/crons" in answer.json()["detail"] and engine.crons == {}


def test_a_change_to_a_schedule_is_checked_and_keeps_it_a_schedule_of_the_same_task(engine):
    engine.post("/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada"))
    patch = lambda body: httpx.patch(f"{engine.root_url}/runs/crons/cron-1", json=body, timeout=10)  # noqa: E731
    assert patch({"schedule": "* * * * *"}).status_code == 422
    assert patch({"webhook": "http://127.0.0.1:1/x"}).status_code == 422
    moved = patch({"config": {"configurable": {"task": "lithium"}}})
    assert moved.status_code == 422 and "task cannot change" in moved.json()["detail"]
    assert patch({"enabled": False}).status_code == 200
    assert patch({"config": {"configurable": {"max_cost_usd": 2}}, "metadata": {"note": "x"}}).status_code == 200
    cron = engine.crons["cron-1"]
    assert cron["config"]["configurable"] == {
        "max_cost_usd": 2,
        "task": "sodium",
        "schedule": "sodium",
        "user_id": "ada",
        "clarify": False,
        "plan_review": False,
    }
    assert cron["metadata"] == {"note": "x", "schedule": "sodium", "user_id": "ada"}


def test_a_run_with_a_webhook_is_held_to_the_same_policy(engine):
    refused = engine.post("/threads/t-1/runs/stream", {"assistant_id": "x", "webhook": "http://10.0.0.1/h"})
    assert refused.status_code == 422 and engine.runs == []
    assert engine.post("/threads/t-1/runs/stream", {"assistant_id": "x"}).status_code == 200
    assert engine.runs == [{"assistant_id": "x"}]


def test_where_the_engine_would_start_a_run_at_once_the_schedule_is_created_paused_then_resumed():
    with Engine(settings(), defer_first_run=True, owner="ada") as engine:
        answer = engine.post("/runs/crons", cron_body("sodium", QUESTION, "0 8 * * MON", user="ada"))
        assert answer.status_code == 200 and answer.json()["enabled"] is True
        assert engine.crons["cron-1"]["payload"]["enabled"] is False, "created paused: no run at once"
        assert engine.updates == [("cron-1", {"enabled": True})]
        paused = engine.post("/runs/crons", cron_body("lithium", QUESTION, "0 8 * * MON", user="ada", enabled=False))
        assert paused.json()["enabled"] is False and len(engine.updates) == 1


def test_langgraph_dev_posts_a_webhook_with_the_runs_public_fields_only_and_leaves_the_policy_to_the_guard():
    webhooks = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())["webhooks"]
    assert tuple(webhooks["allowed_fields"]) == WEBHOOK_FIELDS and "kwargs" not in WEBHOOK_FIELDS
    # langgraph-api's own loopback refusal would override DRA_WEBHOOK_ALLOW_HOSTS; the guard holds the policy.
    assert webhooks["url"] == {"disable_loopback": False, "require_https": False}
