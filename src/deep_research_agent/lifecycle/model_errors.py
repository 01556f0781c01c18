"""A failed model call, explained: one secret-free line that says what to fix.

Contract: ``describe_model_error(exc, endpoint)`` names the endpoint (never the key), the HTTP meaning
(401 key, 403 access, 404 unknown model with its tier, 429 after retries, 400 with the provider's message
and, on a context overflow, the setting that compacts sooner; timeouts and unreachable servers), and is
passed through ``redact`` because providers echo keys back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx
import openai

from ..domain.knobs import KnobError, not_negative
from ..domain.secrets import redact


@dataclass(frozen=True)
class ModelEndpoint:
    """What an explanation names: the endpoint's URL, the run's model tier, its request timeout in seconds
    (0: none). An empty URL or tier, or a negative or non-finite timeout, is refused."""

    base_url: str
    model_tier: str
    request_timeout: float

    def __post_init__(self) -> None:
        for name in ("base_url", "model_tier"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise KnobError("ModelEndpoint", name, value, "a non-empty string")
        not_negative("ModelEndpoint", "request_timeout", self.request_timeout)


def describe_model_error(exc: BaseException, endpoint: ModelEndpoint) -> str:
    """A one-line, secret-free explanation of a failed model call that says what to fix."""
    where = endpoint.base_url
    if isinstance(exc, openai.AuthenticationError):
        text = (
            f"The model endpoint {where} rejected the API key (401 Unauthorized). "
            "Fix OPENAI_API_KEY (or OPENROUTER_API_KEY) in .env, or configurable.apiKeys.OPENAI_API_KEY"
        )
    elif isinstance(exc, openai.PermissionDeniedError):
        text = f"The model endpoint {where} refused access (403). Check the key's permissions and credit"
    elif isinstance(exc, openai.NotFoundError):
        model = _requested_model(exc)
        named = f"the model {model!r}" if model else "a model"
        text = (
            f"The model endpoint {where} does not know {named} of tier {endpoint.model_tier!r} (404). "
            "Check OPENAI_BASE_URL and DRA_MODEL_TIER"
        )
    elif isinstance(exc, openai.RateLimitError):
        text = f"The model endpoint {where} kept rate-limiting (429) after retries. Retry later or raise your limits"
    elif isinstance(exc, openai.BadRequestError):
        message = _message_of(exc)
        text = f"The model endpoint {where} rejected the request (400): {message}"
        if any(sign in message.lower() for sign in _CONTEXT_OVERFLOW_SIGNS):
            text += (
                ". The conversation outgrew the model's context: lower DRA_COMPACTION_TOKENS so it is compacted sooner"
            )
    elif isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        text = f"The model endpoint {where} timed out after {endpoint.request_timeout:g} s. Retry, or raise DRA_REQUEST_TIMEOUT"
    elif isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        text = f"Cannot reach the model endpoint {where}. Check OPENAI_BASE_URL and that the server is up"
    elif isinstance(exc, openai.APIStatusError):
        text = f"The model endpoint {where} failed with HTTP {exc.status_code} after retries: {_message_of(exc)}"
    else:
        text = f"The model call failed ({type(exc).__name__})"
    return redact(text)


_CONTEXT_OVERFLOW_SIGNS = ("context length", "context_length", "context window", "maximum context", "too many tokens")


def _requested_model(exc: openai.APIStatusError) -> str | None:
    """The model the failed request asked for, read back from its JSON body."""
    try:
        model = json.loads(exc.request.content).get("model")
    except (ValueError, AttributeError, RuntimeError):
        return None
    return model if isinstance(model, str) else None


def _message_of(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    message = body.get("message") or (body.get("error") or {}).get("message") if body else None
    # Redacted before it is cut: a cut could leave half a key that no longer matches.
    return redact(str(message or exc.message))[:300]
