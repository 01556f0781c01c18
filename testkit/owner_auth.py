"""Per-user threads on ``langgraph dev`` (``AgentServer(auth="<this file>:auth")``): the documented LangGraph
pattern of an ``owner`` in each thread's metadata, so a caller reads and runs only the threads it created.

``TOKENS`` maps each test user's API key (sent as ``x-api-key``) to the user; anything else gets 401.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

TOKENS = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}

auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[Any, Any]) -> Auth.types.MinimalUserDict:
    decoded = {
        (k.decode() if isinstance(k, bytes) else k).lower(): v.decode() if isinstance(v, bytes) else v
        for k, v in headers.items()
    }
    user = TOKENS.get(decoded.get("x-api-key", ""))
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown or missing API key.")
    return {"identity": user, "is_authenticated": True}


@auth.on.threads
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict):
        value.setdefault("metadata", {}).update(owner)
    return owner
