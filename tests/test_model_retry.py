"""Model-call retries in-process: which errors retry, the backoff schedule, Retry-After, and the give-up point."""

from __future__ import annotations

import httpx
import openai
import pytest

from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.retry_after import MAX_DELAY_S, backoff_s
from deep_research_agent.modelcalls import retry as model_retry
from deep_research_agent.modelcalls.retry import ModelCallRetryMiddleware, is_retryable, provider_retry_after_s
from testkit.guard_calls import capture_events

pytestmark = pytest.mark.anyio
REQUEST = httpx.Request("POST", "http://model.test/v1/chat/completions")


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx.Response(status, headers=headers or {}, request=REQUEST, json={"error": {"message": "x"}})
    kinds = {400: openai.BadRequestError, 401: openai.AuthenticationError, 429: openai.RateLimitError}
    kind = kinds.get(status, openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return kind("scripted", response=response, body=None)


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (status_error(429), True),
        (status_error(500), True),
        (status_error(503), True),
        (status_error(408), True),
        (openai.APITimeoutError(request=REQUEST), True),
        (openai.APIConnectionError(request=REQUEST), True),
        (httpx.ConnectError("refused"), True),
        (TimeoutError("no streamed chunk in time"), True),
        (status_error(400), False),
        (status_error(401), False),
        (status_error(404), False),
        (ValueError("not a provider error"), False),
    ],
)
def test_only_transient_provider_errors_are_retried(exc, retryable):
    assert is_retryable(exc) is retryable


def test_the_wait_a_provider_asks_for_is_read_from_its_answer_headers():
    # The header formats themselves are specified in test_retry_after.py.
    assert provider_retry_after_s(status_error(429, {"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert provider_retry_after_s(status_error(429)) is None
    assert provider_retry_after_s(openai.APITimeoutError(request=REQUEST)) is None


def test_the_backoff_grows_exponentially_with_jitter_and_is_capped():
    lows = [backoff_s(n, None, jitter=0.0) for n in range(1, 8)]
    highs = [backoff_s(n, None, jitter=0.999) for n in range(1, 8)]
    assert lows[:4] == [0.5, 1.0, 2.0, 4.0]
    assert all(low < high <= MAX_DELAY_S for low, high in zip(lows, highs, strict=True))
    assert highs[-1] == pytest.approx(MAX_DELAY_S, rel=0.01)


def test_a_retry_after_is_never_waited_short_and_only_slightly_long():
    assert backoff_s(1, 2.0, jitter=0.0) == 2.0
    assert 2.0 < backoff_s(1, 2.0, jitter=0.999) <= 2.2
    assert backoff_s(3, 60.0, jitter=0.999) <= 61.0


class FailingModel:
    """A model handler that fails with ``errors`` in turn, then answers."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self, request):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


@pytest.fixture
def events(monkeypatch):
    return capture_events(monkeypatch, model_retry)


def retrying(sleeps: list[float], *, max_retries: int = 4, max_wait_s: float = 120.0) -> ModelCallRetryMiddleware:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return ModelCallRetryMiddleware(
        role="orchestrator", model="m", max_retries=max_retries, max_wait_s=max_wait_s, sleep=sleep, jitter=lambda: 0.0
    )


async def test_waits_honour_retry_after_and_each_one_is_announced(events):
    sleeps: list[float] = []
    model = FailingModel(*(status_error(429, {"retry-after-ms": "300"}) for _ in range(4)))

    assert await retrying(sleeps).awrap_model_call(None, model) == "answer"

    assert sleeps == [0.3, 0.3, 0.3, 0.3] and model.calls == 5
    assert [(e["state"], e["attempt"], e["wait_s"]) for e in events] == [("rate_limited", n, 0.3) for n in (1, 2, 3, 4)]


async def test_without_retry_after_the_exponential_schedule_applies(events):
    sleeps: list[float] = []
    model = FailingModel(status_error(503), openai.APITimeoutError(request=REQUEST), status_error(500))

    await retrying(sleeps).awrap_model_call(None, model)

    assert sleeps == [0.5, 1.0, 2.0]
    assert [e["reason"] for e in events] == ["HTTP 503", "timeout", "HTTP 500"]


async def test_it_gives_up_after_the_retry_count_and_raises_the_providers_error(events):
    sleeps: list[float] = []
    last = status_error(429, {"retry-after": "1"})
    model = FailingModel(status_error(429, {"retry-after": "1"}), status_error(429, {"retry-after": "1"}), last)

    with pytest.raises(openai.RateLimitError) as raised:
        await retrying(sleeps, max_retries=2).awrap_model_call(None, model)

    assert raised.value is last and sleeps == [1.0, 1.0]
    assert [e["state"] for e in events] == ["rate_limited", "rate_limited", "model_unavailable"]
    assert events[-1]["attempt"] == 3


async def test_it_gives_up_when_the_next_wait_would_exceed_the_waiting_budget(events):
    sleeps: list[float] = []
    model = FailingModel(status_error(429, {"retry-after": "50"}), status_error(429, {"retry-after": "80"}))

    with pytest.raises(openai.RateLimitError):
        await retrying(sleeps, max_wait_s=120).awrap_model_call(None, model)

    assert sleeps == [50.0]
    assert events[-1]["state"] == "model_unavailable"


async def test_a_rejected_key_fails_fast_without_waiting(events):
    sleeps: list[float] = []
    model = FailingModel(status_error(401))

    with pytest.raises(openai.AuthenticationError):
        await retrying(sleeps).awrap_model_call(None, model)

    assert sleeps == [] and model.calls == 1 and events == []


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("max_retries", -1),
        ("max_retries", 1.5),
        ("max_wait_s", -0.1),
        ("max_wait_s", float("nan")),
        ("sleep", None),
        ("jitter", 0.5),
    ],
)
def test_a_negative_count_or_wait_or_an_uncallable_hook_is_refused_naming_it(knob: str, value: object):
    knobs: dict[str, object] = {"role": "orchestrator", "model": "m", "max_retries": 3, "max_wait_s": 60.0}
    with pytest.raises(KnobError, match=knob) as refused:
        ModelCallRetryMiddleware(**{**knobs, knob: value})  # type: ignore[arg-type]
    assert refused.value.parameter == knob


def test_zero_retries_and_zero_waiting_are_accepted():
    middleware = ModelCallRetryMiddleware(role="orchestrator", model="m", max_retries=0, max_wait_s=0)
    assert (middleware.max_retries, middleware.max_wait_s) == (0, 0.0)
