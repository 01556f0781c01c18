"""Who is calling: static bearer tokens for a team deployment on Aegra (``aegra.json`` ``auth.path``).

Contract:
- tokens come from ``DRA_AUTH_TOKENS`` (``user=token`` pairs, comma-separated) or ``DRA_AUTH_TOKENS_FILE``
  (one ``user=token`` a line; ``#`` comments), read once at start; a token shorter than 16 characters
  refuses the start, so a guessable one never guards a deployment;
- a request names its token as ``Authorization: Bearer <token>`` or ``x-api-key: <token>`` (what
  ``langgraph_sdk.get_client(api_key=...)`` and ``LANGGRAPH_API_KEY`` send), or, from the web UI, as the
  ``dra_token`` cookie its sign-in sets (``deploy/routes.py``; HttpOnly and SameSite=Strict, so another
  site's page can neither read it nor make a browser send it); the user it maps to is the
  request's identity, which Aegra uses to keep threads, runs and store items apart, and the agent to
  count each user's runs in progress (``DRA_MAX_RUNS_PER_USER``);
- a request without a known token gets 401, and the answer never echoes what was sent;
- with no tokens configured every request is the one ``anonymous`` user, as with Aegra's default
  (no isolation between callers), and the start says so in the log.

Replace this file with your identity provider's check for anything beyond a small team: the object is a
``langgraph_sdk.Auth``, the same shape LangGraph Platform takes.
"""

from __future__ import annotations

import hmac
import logging
import os
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

from langgraph_sdk import Auth

from deep_research_agent.routes import SESSION_COOKIE

logger = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
ANONYMOUS = {"identity": "anonymous", "display_name": "Anonymous User", "is_authenticated": False}


def parse_tokens(text: str, *, separator: str = ",") -> dict[str, str]:
    """``user=token`` pairs as token → user; refuses an entry without both parts or with a short token."""
    tokens: dict[str, str] = {}
    for number, entry in enumerate(text.split(separator), start=1):
        entry = entry.strip()
        if not entry or entry.startswith("#"):
            continue
        user, sep, token = entry.partition("=")
        user, token = user.strip(), token.strip()
        if not sep or not user or not token:
            raise ValueError(f"auth token entry {number} is not user=token")
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(f"the token of user {user!r} is shorter than {MIN_TOKEN_CHARS} characters")
        tokens[token] = user
    return tokens


def load_tokens(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = dict(os.environ) if environ is None else environ
    tokens = parse_tokens(environ.get("DRA_AUTH_TOKENS", ""))
    if path := environ.get("DRA_AUTH_TOKENS_FILE", "").strip():
        tokens |= parse_tokens(Path(path).expanduser().read_text(encoding="utf-8"), separator="\n")
    return tokens


def presented_token(headers: dict[str, str]) -> str:
    lowered = {key.lower(): value for key, value in headers.items()}
    scheme, _, credential = lowered.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip()
    if key := lowered.get("x-api-key", "").strip():
        return key
    try:
        morsel = SimpleCookie(lowered.get("cookie", "")).get(SESSION_COOKIE)
    except CookieError:
        return ""
    return morsel.value.strip() if morsel is not None else ""


def user_for(token: str, tokens: dict[str, str]) -> str | None:
    """The user of ``token``, comparing against every known token in constant time."""
    found = None
    for known, user in tokens.items():
        if hmac.compare_digest(known.encode(), token.encode()):
            found = user
    return found


TOKENS = load_tokens()
if not TOKENS:
    logger.warning("no DRA_AUTH_TOKENS or DRA_AUTH_TOKENS_FILE: every caller is the one anonymous user")

auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[str, str]) -> Auth.types.MinimalUserDict:
    if not TOKENS:
        return dict(ANONYMOUS)  # type: ignore[return-value]
    user = user_for(presented_token(headers), TOKENS)
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown or missing API token.")
    return {"identity": user, "display_name": user, "is_authenticated": True}
