"""The evaluation judge: a model kept apart from the researched one scores each report, RACE- and FACT-style.

Contract:
- ``JudgeSettings.from_env()`` reads ``DRA_EVAL_JUDGE_MODEL`` (no model: no judge), ``DRA_EVAL_JUDGE_BASE_URL``
  and ``DRA_EVAL_JUDGE_API_KEY``: its own endpoint and key, never the researched model's, so a suite is not
  graded by the model it measures unless the user points both at it;
- ``Judge.score(question, values)`` asks for RACE-style quality (comprehensiveness, depth, instruction
  following, readability, 0–10 each) of the report and, when the question has a reference, of the reference
  too, scoring each dimension as the report's share ``report ÷ (report + reference)`` as RACE does; and
  FACT-style support for each claim of the state's ``citations`` against the sentences of the sources it
  cites, with the report gate's own judge prompt and reply parser (``report/judge.py``), one call per
  ``BATCH_CLAIMS`` claims;
- any failure (unreachable, time-out, unparseable answer) is the question's ``JudgeScores.error``: the
  scorecard keeps the run's own scores, it never fails the suite;
- ``Judge.info()`` is what the scorecard records so scores are only compared under one judge: model,
  endpoint, date and each prompt's text and SHA-256.

Why not ``lifecycle/claim_judge.py``: that judge is the run's utility model, metered on the run's usage;
this one must be a different endpoint, outside any run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import SecretStr

from ..domain.names import ClaimVerdict
from ..modelcalls.models import AGENT_HEADER
from ..report import judge as claim_judge
from .scorecard import JudgeInfo, JudgePrompt, JudgeScores, RaceScores
from .suite import Question

# Named in each judge request's agent header, one per prompt, so a scripted model server answers each like a role.
RACE_ROLE = "eval-judge-race"
FACT_ROLE = "eval-judge-fact"
DIMENSIONS = ("comprehensiveness", "depth", "instruction_following", "readability")
JUDGE_TIMEOUT_S = 120.0
REPORT_CHARS = 60_000

RACE_SYSTEM = """You grade research reports written to answer a question, as an expert reviewer.

Score each report from 0 to 10 on four dimensions:
- comprehensiveness: does it cover every aspect the question asks about, with the key facts?
- depth: does it explain causes, mechanisms and trade-offs rather than list facts?
- instruction_following: does it answer exactly what was asked, in the form and language asked for, and
  meet every criterion listed?
- readability: is it clearly structured, concise and easy to follow?
Judge the text alone; do not reward length for its own sake.

Answer with JSON only, no other text:
{"report": {"comprehensiveness": 7, "depth": 6, "instruction_following": 8, "readability": 7},
 "reference": {"comprehensiveness": 8, "depth": 7, "instruction_following": 8, "readability": 8}}
with "reference" only when a reference report is given."""


class JudgeError(RuntimeError):
    """The judge could not score a report."""


@dataclass(frozen=True)
class JudgeSettings:
    model: str
    base_url: str
    api_key: SecretStr

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JudgeSettings | None:
        environ = os.environ if environ is None else environ
        model = environ.get("DRA_EVAL_JUDGE_MODEL", "").strip()
        if not model:
            return None
        base_url = environ.get("DRA_EVAL_JUDGE_BASE_URL", "").strip() or "https://api.openai.com/v1"
        # Local OpenAI-compatible servers ignore the key; the client still needs one.
        return cls(model=model, base_url=base_url, api_key=SecretStr(environ.get("DRA_EVAL_JUDGE_API_KEY") or "none"))


def _prompt(name: str, text: str) -> JudgePrompt:
    return JudgePrompt(name=name, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), text=text)


def _json_object(reply: str) -> dict[str, Any]:
    text = re.sub(r"<think>.*?</think>", "", reply, flags=re.DOTALL | re.IGNORECASE)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise JudgeError(f"the judge answered no JSON object: {reply[:120]!r}")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise JudgeError(f"the judge's JSON does not parse ({exc.msg}): {reply[:120]!r}") from exc
    if not isinstance(data, dict):
        raise JudgeError("the judge's JSON is not an object")
    return data


def _dimensions(data: Any, what: str) -> dict[str, float]:
    if not isinstance(data, dict):
        raise JudgeError(f"the judge gave no scores for the {what}")
    scores = {}
    for name in DIMENSIONS:
        value = data.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 10:
            raise JudgeError(f"the judge's {name} score for the {what} is not a number from 0 to 10: {value!r}")
        scores[name] = float(value)
    return scores


def race_scores(reply: str, *, with_reference: bool) -> RaceScores:
    data = _json_object(reply)
    report = _dimensions(data.get("report"), "report")
    if with_reference:
        reference = _dimensions(data.get("reference"), "reference")
        shares = {n: report[n] / (report[n] + reference[n]) if report[n] + reference[n] else 0.5 for n in DIMENSIONS}
    else:
        shares = {n: report[n] / 10 for n in DIMENSIONS}
    return RaceScores(**shares, overall=sum(shares.values()) / len(DIMENSIONS), against_reference=with_reference)


def race_user(question: Question, report: str) -> str:
    lines = [f"Question ({question.language}):", question.question, ""]
    if question.rubric:
        lines += ["Criteria the answer must meet:", *(f"- {c}" for c in question.rubric), ""]
    lines += ["Report:", report[:REPORT_CHARS]]
    if question.reference:
        lines += ["", "Reference report:", question.reference[:REPORT_CHARS]]
    return "\n".join(lines)


def fact_batches(citations: Sequence[Mapping[str, Any]]) -> list[claim_judge.JudgeBatch]:
    """The state's claims, each with the sentences of its cited sources, as the report gate's judge batches."""
    items: list[claim_judge.JudgeItem] = []
    passages: dict[tuple[int, str], claim_judge.Passage] = {}
    for position, entry in enumerate(citations):
        own = []
        for source in entry.get("sources") or []:
            sentence = " ".join(str(source.get("sentence") or "").split())
            if not sentence:
                continue
            key = (int(source.get("index") or 0), sentence)
            if key not in passages:
                passages[key] = claim_judge.Passage(
                    f"P{len(passages) + 1}", key[0], str(source.get("evidence_id") or ""), sentence
                )
            own.append(passages[key])
        indexes = tuple(int(n) for n in entry.get("indexes") or ())
        claim = str(entry.get("claim") or "")
        items.append(claim_judge.JudgeItem(f"C{position + 1}", position, str(position), claim, indexes, tuple(own)))
    batches = []
    for start in range(0, len(items), claim_judge.BATCH_CLAIMS):
        chunk = tuple(items[start : start + claim_judge.BATCH_CLAIMS])
        used = {p for item in chunk for p in item.passages}
        batches.append(claim_judge.JudgeBatch(items=chunk, passages=tuple(p for p in passages.values() if p in used)))
    return batches


class Judge:
    """One judge model for a whole suite."""

    def __init__(self, settings: JudgeSettings, *, timeout: float = JUDGE_TIMEOUT_S) -> None:
        from langchain_openai import ChatOpenAI

        self.settings = settings
        self.timeout = timeout
        self.date = datetime.now(UTC).date().isoformat()
        self.models = {
            role: ChatOpenAI(
                model=settings.model,
                base_url=settings.base_url,
                api_key=settings.api_key,
                temperature=0,
                max_retries=1,
                timeout=timeout,
                default_headers={AGENT_HEADER: role},
            )
            for role in (RACE_ROLE, FACT_ROLE)
        }

    def info(self) -> JudgeInfo:
        return JudgeInfo(
            model=self.settings.model,
            base_url=self.settings.base_url,
            date=self.date,
            prompts=[_prompt("race", RACE_SYSTEM), _prompt("fact", claim_judge.SYSTEM)],
        )

    async def _ask(self, role: str, system: str, user: str) -> str:
        try:
            reply = await asyncio.wait_for(
                self.models[role].ainvoke([SystemMessage(system), HumanMessage(user)]), timeout=self.timeout
            )
        except TimeoutError as exc:
            raise JudgeError(f"the judge did not answer within {self.timeout:g} s") from exc
        except Exception as exc:  # noqa: BLE001 - any client or endpoint failure is the judge's error
            raise JudgeError(f"the judge's endpoint failed: {type(exc).__name__}: {exc}") from exc
        return reply.text

    async def score(self, question: Question, values: Mapping[str, Any]) -> JudgeScores:
        report = str(values.get("final_report") or "")
        if not report:
            return JudgeScores(error="no report to judge")
        citations = [c for c in values.get("citations") or [] if isinstance(c, dict)]
        try:
            race = race_scores(
                await self._ask(RACE_ROLE, RACE_SYSTEM, race_user(question, report)),
                with_reference=bool(question.reference),
            )
            supported = judged = 0
            for batch in fact_batches(citations):
                found = claim_judge.parse_reply(await self._ask(FACT_ROLE, batch.system, batch.user), batch)
                judged += len(found)
                supported += sum(1 for j in found.values() if j.verdict == ClaimVerdict.SUPPORTED)
        except (JudgeError, claim_judge.JudgeReplyError) as exc:
            return JudgeScores(error=str(exc))
        return JudgeScores(
            race=race,
            fact_claims=judged,
            fact_supported=supported,
            fact_accuracy=supported / judged if judged else None,
        )
