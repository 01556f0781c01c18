"""Specification of how LangSmith's spans around middleware layers cost a server nothing while tracing is off:
no worker-thread round trip per span, and the layer's result and errors are unchanged."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from langsmith import traceable, tracing_context

from deep_research_agent.modelcalls.tracing import inline_untraced_spans

pytestmark = pytest.mark.anyio


class CountingExecutor(ThreadPoolExecutor):
    """The event loop's default executor, counting what is handed to a worker thread."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@traceable(name="layer.awrap_model_call")
async def layer(value: int) -> int:
    if value < 0:
        raise ValueError("negative")
    return value * 2


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_untraced_spans_around_a_layer_use_no_worker_thread():
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    inline_untraced_spans()

    with tracing_context(enabled=False):
        results = [await layer(n) for n in range(10)]
        with pytest.raises(ValueError, match="negative"):
            await layer(-1)

    assert results == [n * 2 for n in range(10)]
    assert executor.submitted == 0, "each span was set up or closed on a worker thread"
    await asyncio.to_thread(lambda: None)
    assert executor.submitted == 1, "the count sees what does go to a worker thread"
