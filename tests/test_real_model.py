"""The real-model check as a test: a real llama-server and Qwen2.5-Coder-0.5B research one question end to end.

Behind the ``real_model`` marker and ``DRA_REAL_MODEL=1``: it takes minutes and needs the built server and the
fetched model (``uv run python -m bench.local_model`` builds and fetches both into the cache first). The model
is reached through the tap (``testkit/model_tap.py``), so a failing check shows what the model wrote.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from bench import local_model
from testkit.model_tap import ModelTap
from testkit.ports import free_port
from testkit.web import WebStandIn

pytestmark = [pytest.mark.real_model]


def test_a_small_real_model_researches_or_ends_honestly_never_answered_unresearched() -> None:
    if os.environ.get("DRA_REAL_MODEL") != "1":
        pytest.skip("the real-model check runs only with DRA_REAL_MODEL=1 (it takes minutes)")
    binary = local_model.find_server()
    if binary is None or not local_model.DEFAULT_MODEL.cache.is_file():
        pytest.skip("llama-server or the GGUF model is absent: run `uv run python -m bench.local_model` once")
    port = free_port()
    server = local_model.start_server(binary, local_model.DEFAULT_MODEL.cache, port)
    try:
        with WebStandIn() as web, ModelTap(f"http://127.0.0.1:{port}") as tap:
            env = local_model.local_env(f"{tap.root_url}/v1", web.base_url, web.allow_host)
            result = asyncio.run(local_model.research(env, local_model.QUESTION, 1200))
    finally:
        server.terminate()
        server.wait(timeout=30)
    written = "\n".join(f"{call.agent}: {call.text[:300]!r}" for call in tap.calls)
    [(state, reason, outcome, _)] = result["end"]
    assert not (outcome == "answered" and not result["tool_events"].get("search_query")), written
    assert reason != "direct_answer", f"a question asking for sources must be researched; the model wrote:\n{written}"
    assert result["model_calls"] == len(tap.calls), written
