"""Run a suite through an agent server with ``langgraph_sdk`` and collect a scorecard.

Contract:
- ``run_suite(suite, url, ...)`` streams each question on a thread of its own (the ``custom`` channel of
  every sub-graph: the protocol events), at most ``concurrency`` at once, with ``{"clarify": false}`` and
  the tier in the run's configurable; an agent that asks clarifying questions anyway gets the ``ask``
  command's one "no answers" reply on the same thread;
- a progress line per question as it ends (``progress``), in completion order;
- one question's failure (a refused run, a broken stream, a time-out) is that question's ``error``, and
  the others go on; the scorecard is ``complete`` only when every question reached an end status;
- a configured judge scores each report once its run ends (``judge.py``); its failure is the question's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..cli.ask import NO_ANSWERS_REPLY, run_parts
from .judge import Judge
from .metrics import END_STATES, measure
from .scorecard import QuestionResult, Scorecard
from .suite import Question, Suite

STREAM_MODES = ["custom"]
QUESTION_TIMEOUT_S = 1800.0
# Keys whose values are credentials: a scorecard records the run's configurable without them.
_SECRET_KEYS = ("apikeys", "api_key", "token", "secret", "password", "bearer")

Progress = Callable[[str], None]


def public_config(configurable: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in configurable.items() if not any(s in k.lower() for s in _SECRET_KEYS)}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


async def _stream(client: Any, thread_id: str, content: str, configurable: Mapping[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for part in run_parts(client, thread_id, content, configurable, stream_mode=STREAM_MODES):
        if part.event.split("|")[0] == "custom" and isinstance(part.data, dict):
            events.append(part.data)
        elif part.event == "error":
            raise RuntimeError(f"the server reported a stream error: {part.data}")
    return events


async def run_question(
    client: Any, question: Question, configurable: Mapping[str, Any], judge: Judge | None, timeout: float
) -> QuestionResult:
    started = time.monotonic()
    thread_id: str | None = None
    try:
        thread_id = (await client.threads.create(metadata={"eval_question": question.id}))["thread_id"]
        events = await asyncio.wait_for(_stream(client, thread_id, question.question, configurable), timeout)
        clarified = any(e.get("type") == "clarification" for e in events)
        if clarified:
            events += await asyncio.wait_for(_stream(client, thread_id, NO_ANSWERS_REPLY, configurable), timeout)
        state = await client.threads.get_state(thread_id)
        values = state.get("values") if isinstance(state, dict) else None
        values = values if isinstance(values, dict) else {}
    except TimeoutError:
        return _failed(question, thread_id, started, f"no end status within {timeout:g} s")
    except Exception as exc:  # noqa: BLE001 - one question's failure is recorded and the suite goes on
        return _failed(question, thread_id, started, f"{type(exc).__name__}: {exc}")
    result = measure(
        question, events, values, thread_id=thread_id, wall_s=time.monotonic() - started, clarified=clarified
    )
    if judge is not None and result.ok:
        result = result.model_copy(update={"judge": await judge.score(question, values)})
    return result


def _failed(question: Question, thread_id: str | None, started: float, error: str) -> QuestionResult:
    return QuestionResult(
        id=question.id,
        question=question.question,
        language=question.language,
        ok=False,
        error=error,
        thread_id=thread_id,
        wall_s=round(time.monotonic() - started, 3),
    )


def _question_problems(results: list[QuestionResult]) -> list[str]:
    lines = [f"{r.id}: the run failed: {r.error}" for r in results if not r.ok]
    lines += [f"{r.id}: the judge failed: {r.judge.error}" for r in results if r.judge and r.judge.error]
    lines += [
        f"{r.id}: fabricated citations: {', '.join(r.fabricated_citations)}" for r in results if r.fabricated_citations
    ]
    return lines


def progress_line(done: int, total: int, result: QuestionResult) -> str:
    if not result.ok:
        return f"[{done}/{total}] {result.id}: FAILED: {result.error}"
    claims = result.coverage or f"{result.claims} claims"
    line = (
        f"[{done}/{total}] {result.id}: {result.end_state}/{result.end_reason} · {claims} · sources read "
        f"{result.sources_read} · {result.wall_s:.1f} s"
    )
    if result.fabricated_citations:
        line += f" · FABRICATED {len(result.fabricated_citations)}"
    if result.judge is not None:
        line += f" · judge {'failed: ' + result.judge.error if result.judge.error else 'scored'}"
    return line


async def run_suite(
    suite: Suite,
    client: Any,
    *,
    server: str,
    configurable: Mapping[str, Any],
    tier: str | None = None,
    judge: Judge | None = None,
    concurrency: int = 1,
    progress: Progress = print,
    timeout: float = QUESTION_TIMEOUT_S,
    problems: list[str] | None = None,
) -> Scorecard:
    started_at, started = _now(), time.monotonic()
    run_config = {**configurable, "clarify": False, **({"model_tier": tier} if tier else {})}
    gate = asyncio.Semaphore(max(1, concurrency))
    results: dict[str, QuestionResult] = {}

    async def one(question: Question) -> None:
        async with gate:
            result = await run_question(client, question, run_config, judge, timeout)
        results[question.id] = result
        progress(progress_line(len(results), len(suite.questions), result))

    await asyncio.gather(*(one(q) for q in suite.questions))
    ordered = [results[q.id] for q in suite.questions]
    card = Scorecard(
        suite=suite.name,
        suite_path=suite.path,
        suite_sha256=suite.sha256,
        server=server,
        tier=tier,
        config=public_config(run_config),
        started_at=started_at,
        finished_at=_now(),
        wall_s=round(time.monotonic() - started, 3),
        judge=judge.info() if judge else None,
        problems=[*suite.problems, *(problems or []), *_question_problems(ordered)],
        complete=all(q.ok and q.end_state in END_STATES for q in ordered),
        questions=ordered,
    )
    return card.summarise()
