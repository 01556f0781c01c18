"""A LangGraph store for ``langgraph dev`` (``langgraph.json`` ``store.path``) that fails or delays chosen writes.

An in-memory store like the dev server's own, except that a put whose value's ``text`` holds ``FAILING_MARK``
raises ``ConnectionError`` (a store that is down) and one holding ``SLOW_MARK`` completes only after ``SLOW_S``.
Tests put the marks in the snippets their scripted model remembers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

FAILING_MARK = "[store-fails]"
SLOW_MARK = "[store-slow]"
SLOW_S = 3.0


def _marked(ops: list[Op], mark: str) -> bool:
    return any(isinstance(op, PutOp) and op.value is not None and mark in str(op.value.get("text", "")) for op in ops)


class FlakyStore(InMemoryStore):
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if _marked(ops, FAILING_MARK):
            raise ConnectionError("the store is unreachable")
        if _marked(ops, SLOW_MARK):
            await asyncio.sleep(SLOW_S)
        return await super().abatch(ops)


def make_store(*_: Any) -> FlakyStore:
    return FlakyStore()
