"""Who a run belongs to, and where the items an API client puts in the store for it land.

Contract:
- ``run_owner(config)`` is the identity the *server* authenticated for the run: ``langgraph_auth_user``'s
  ``identity`` (an object or a mapping; Aegra passes its ``User``, langgraph-api a proxy), else
  ``langgraph_auth_user_id``; ``None`` when the server named nobody. Never ``configurable.user_id``: a
  client may set that key itself (Aegra only fills it in when missing), so it proves nothing;
- ``run_user(config)`` is whom the run acts for in the data it keeps per user (knowledge base, tasks): the
  ``run_owner`` when the server authenticated one (then a client can never name another user), else the
  run's ``user_id`` configurable (or metadata), else ``ANONYMOUS_USER``;
- ``namespace_label(value)`` puts a user id, dataset or task name into a store namespace label (the store
  refuses periods and empty labels: ``%`` and ``.`` are percent-encoded, empty is ``%00``);
  ``label_value`` gives the original back;
- ``client_namespaces(namespace, owner)`` are the namespaces where a client's
  ``store.put_item(namespace, ...)`` can land: as given on ``langgraph dev`` and LangGraph Platform, and
  under ``("users", owner)`` on Aegra, which scopes every store call of its HTTP API by the caller (so on
  Aegra only the run's owner can reach the scoped one). Graph code reads both; one batch, one round trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Aegra's default store scope (api/store.py ``apply_namespace_scoping``): ["users", <identity>, *namespace].
CLIENT_SCOPE_PREFIX = "users"
ANONYMOUS_USER = "anonymous"


def run_owner(config: Mapping[str, Any] | None) -> str | None:
    """The server-authenticated identity of the run's user, or None when the server named none."""
    configurable = (config or {}).get("configurable") or {}
    user = configurable.get("langgraph_auth_user")
    identity = user.get("identity") if isinstance(user, Mapping) else getattr(user, "identity", None)
    identity = identity or configurable.get("langgraph_auth_user_id")
    return str(identity) if identity else None


def run_user(config: Mapping[str, Any] | None) -> str:
    """The user a run acts for (see the module contract)."""
    if owner := run_owner(config):
        return owner
    configurable = (config or {}).get("configurable") or {}
    metadata = (config or {}).get("metadata") or {}
    named = str(configurable.get("user_id") or metadata.get("user_id") or "").strip()
    return named or ANONYMOUS_USER


def namespace_label(value: str) -> str:
    return value.replace("%", "%25").replace(".", "%2E") if value else "%00"


def label_value(label: str) -> str:
    return "" if label == "%00" else label.replace("%2E", ".").replace("%25", "%")


def client_namespaces(namespace: tuple[str, ...], owner: str | None) -> tuple[tuple[str, ...], ...]:
    """Where a client's item under ``namespace`` lands: as given, and in the owner's scope (Aegra)."""
    if not owner:
        return (namespace,)
    return (namespace, (CLIENT_SCOPE_PREFIX, owner, *namespace))
