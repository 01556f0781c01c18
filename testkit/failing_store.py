"""A LangGraph store whose writes fail, for ``langgraph dev``'s ``store.path``: reads work, every put raises.

It stands for a Postgres store that went read-only or away mid-deployment: the server still answers, the
graph still runs, and every write the run makes (evidence texts, task records, decisions) must come back
as a recording failure, never as a lost report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Op, PutOp
from langgraph.store.memory import InMemoryStore


class StoreWriteRefused(ConnectionError):
    """What the failing store raises for a write."""


class WriteFailingStore(InMemoryStore):
    def batch(self, ops: Iterable[Op]) -> list[Any]:
        ops = list(ops)
        self._refuse_writes(ops)
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Any]:
        ops = list(ops)
        self._refuse_writes(ops)
        return await super().abatch(ops)

    @staticmethod
    def _refuse_writes(ops: list[Op]) -> None:
        if any(isinstance(op, PutOp) for op in ops):
            raise StoreWriteRefused("the store refused the write (read-only)")


def make_store() -> WriteFailingStore:
    return WriteFailingStore()
