"""Users for a test ``langgraph dev``: ``deploy/auth.py``'s bearer tokens, and every thread its creator's own.

The tokens are checked by ``deploy/auth.py``'s own functions. Two things differ from Aegra: langgraph-api
hands ``authenticate`` the headers as bytes, and it leaves keeping users apart to the auth object's
handlers, so this one adds LangGraph's documented owner handler: a thread is stamped with its creator,
and reading, searching or running on it is filtered to that creator, so another user's thread answers
404. Loaded by path from ``langgraph.json``'s ``auth.path``, which is why it loads ``deploy/auth.py`` by path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

_spec = importlib.util.spec_from_file_location(
    "dra_deploy_auth", Path(__file__).resolve().parents[1] / "deploy" / "auth.py"
)
assert _spec is not None and _spec.loader is not None
deploy_auth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deploy_auth)

auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    text = {key.decode("latin-1"): value.decode("latin-1") for key, value in headers.items()}
    user = deploy_auth.user_for(deploy_auth.presented_token(text), deploy_auth.TOKENS)
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Unknown or missing API token.")
    return {"identity": user, "display_name": user, "is_authenticated": True}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    # In place: langgraph-api keeps its own reference to the request's metadata.
    metadata = value.setdefault("metadata", {})
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}
