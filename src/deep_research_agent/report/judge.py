"""The claim judge: the claims no deterministic check can settle, judged by a model against their sources.

Contract:
- ``judge_batches(check, library)`` picks the claims to judge (``ClaimCheck.judgeable``: unchecked, or
  supported so far with no figure and no quote, or with words beyond the sentences its figures were found
  in), and for each the passages of every cited source it read that hold its facts (``passages.py``: its
  figures, names and content words together, and their meaning when ``signals`` include it;
  ``PASSAGES_PER_SOURCE`` per source, never a page's header lines), and packs them into batches of at most ``BATCH_CLAIMS`` claims: one prompt each
  (``JudgeBatch.system``, ``.user``), every passage and claim numbered (``P1``, ``C1``), passages shared
  between claims listed once. With ``control`` (the default) each batch also holds one planted control
  claim and its passage (``judge_guard.py``), placed among the others, never part of the report.
- ``parse_reply(reply, batch)`` reads the model's JSON answer: one verdict per claim (``supported``,
  ``not_supported``, ``contradicted``; common synonyms accepted), the passage that decides it, a short
  reason. It tolerates a code fence, a ``<think>`` block and prose around the JSON, a bare list, and a
  mapping of claim ids to verdicts; claims it does not answer keep their deterministic verdict. A reply
  with no usable verdict at all raises ``JudgeReplyError``.
- ``run_judge(check, library, call, timeout=..., known=..., signals=...)`` asks ``call(system, user)`` (the model call,
  made by the layer that may call models: ``lifecycle/claim_judge.py``) for every batch at once, each
  bounded by ``timeout`` seconds, and returns the judgements by claim key (``judgement_key``) and a line
  per batch that failed (an exception, a time-out, an unparseable answer, the control claim unanswered)
  for the caller's warning. A judge that calls a control claim supported is ``unreliable``: the outcome
  holds none of its verdicts, ``known`` ones included. A ``supported`` verdict that names no passage
  sharing the claim's content, or gives an empty or boilerplate reason, becomes ``unchecked`` (listed in
  ``unfounded``). It never raises: a failed batch leaves its claims as the deterministic checks left them.
  ``known`` holds judgements already made (a resubmitted draft's unchanged claims are not judged again).
- ``apply_judgements(check, judgements)``: the check with each judged claim's verdict the judge's, its
  ``decided_by`` ``judged`` (``not_checked`` for one downgraded to ``unchecked``), its ``detail`` the
  judge's reason and the deciding sentence set (and marked ``deciding``) on the source it comes from. A
  judgement is found again by its key after the report is renumbered, so the delivery's re-check keeps it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..domain.names import ClaimMethod, ClaimVerdict, WarningReason
from ..evidence.text import EvidenceLibrary, EvidenceText, Span
from .claims import CheckedClaim, ClaimCheck
from .judge_guard import control_for, unfounded_support
from .passages import SIGNALS, ClaimFacts, PassageSignal, choose_passages

JudgeCall = Callable[[str, str], Awaitable[str]]

BATCH_CLAIMS = 20
PASSAGES_PER_SOURCE = 3
REASON_CHARS = 200
FAILED_REASON = WarningReason.CLAIM_JUDGE_FAILED
UNRELIABLE_REASON = WarningReason.CLAIM_JUDGE_UNRELIABLE
UNFOUNDED_REASON = WarningReason.CLAIM_VERDICT_UNFOUNDED
# The position of a batch's planted control claim: it is no claim of the report.
CONTROL = -1

SYSTEM = """You check the sentences of a research report against passages of the sources they cite.

For each claim, decide from its passages alone, never from what you know:
- "supported": the passages state what the claim says; a faithful paraphrase or summary counts.
- "contradicted": a passage says something the claim cannot be true alongside: another person, place,
  cause, date, direction or amount.
- "not_supported": the passages neither state nor contradict it, or the claim adds a detail (a cause, a
  material, a name, a purpose, a consequence) that no passage gives.
Judge every part of the claim: one detail the passages do not give makes it "not_supported".

Answer with JSON only, no other text:
{"verdicts": [{"claim": "C1", "verdict": "supported", "passage": "P2", "reason": "..."}]}
one entry per claim, where "passage" is the id of the passage that decides the verdict (the closest one
when none does) and "reason" says why in at most 20 words, naming what that passage says."""

_VERDICTS: dict[str, ClaimVerdict] = {
    "supported": ClaimVerdict.SUPPORTED,
    "support": ClaimVerdict.SUPPORTED,
    "supports": ClaimVerdict.SUPPORTED,
    "entailed": ClaimVerdict.SUPPORTED,
    "entailment": ClaimVerdict.SUPPORTED,
    "true": ClaimVerdict.SUPPORTED,
    "yes": ClaimVerdict.SUPPORTED,
    "not_supported": ClaimVerdict.NOT_SUPPORTED,
    "unsupported": ClaimVerdict.NOT_SUPPORTED,
    "not_enough_info": ClaimVerdict.NOT_SUPPORTED,
    "not_enough_information": ClaimVerdict.NOT_SUPPORTED,
    "insufficient": ClaimVerdict.NOT_SUPPORTED,
    "neutral": ClaimVerdict.NOT_SUPPORTED,
    "unverifiable": ClaimVerdict.NOT_SUPPORTED,
    "no": ClaimVerdict.NOT_SUPPORTED,
    "contradicted": ClaimVerdict.CONTRADICTED,
    "contradicts": ClaimVerdict.CONTRADICTED,
    "contradiction": ClaimVerdict.CONTRADICTED,
    "refuted": ClaimVerdict.CONTRADICTED,
    "false": ClaimVerdict.CONTRADICTED,
}
_THINKING_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_ID_RE = re.compile(r"^\s*[A-Za-z]?\s*#?\s*(\d+)\s*$")
_CITATION_RE = re.compile(r"\s*\[\d+(?:\s*[-–,]\s*\d+)*\]")


class JudgeReplyError(ValueError):
    """The judge's answer holds no usable verdict."""


@dataclass(frozen=True)
class Passage:
    id: str  # "P1"
    index: int  # the cited source's [n]
    evidence_id: str
    text: str


@dataclass(frozen=True)
class JudgeItem:
    id: str  # "C1"
    position: int  # in ``ClaimCheck.checked``; ``CONTROL`` for the planted control claim
    key: str
    claim: str
    indexes: tuple[int, ...]
    passages: tuple[Passage, ...]
    facts: ClaimFacts | None = None  # what its passages were chosen by; None for the control claim


@dataclass(frozen=True)
class JudgeBatch:
    items: tuple[JudgeItem, ...]  # the control claim among them, when planted
    passages: tuple[Passage, ...]
    system: str = SYSTEM

    @property
    def claims(self) -> tuple[JudgeItem, ...]:
        """The report's claims of the batch, the control claim aside."""
        return tuple(item for item in self.items if item.position != CONTROL)

    @property
    def user(self) -> str:
        lines = ["Passages:"]
        lines += [f"{p.id} (source [{p.index}]): {p.text}" for p in self.passages]
        lines += ["", "Claims:"]
        for item in self.items:
            cites = " ".join(f"[{n}]" for n in item.indexes)
            read = ", ".join(p.id for p in item.passages)
            lines.append(f"{item.id} (cites {cites}; its passages: {read}): {item.claim}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Judgement:
    """The judge's verdict on one claim, and the passage that decides it."""

    verdict: ClaimVerdict
    reason: str = ""
    index: int | None = None
    evidence_id: str | None = None
    sentence: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "index": self.index,
            "evidence_id": self.evidence_id,
            "sentence": self.sentence,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Judgement:
        return cls(
            verdict=ClaimVerdict(data["verdict"]),
            reason=str(data.get("reason") or ""),
            index=data.get("index"),
            evidence_id=data.get("evidence_id"),
            sentence=str(data.get("sentence") or ""),
        )


@dataclass(frozen=True)
class JudgeOutcome:
    """The verdicts that hold, by claim key; what failed; the claims whose ``supported`` did not hold; and
    whether the judge called a control claim supported (then ``judgements`` is empty)."""

    judgements: dict[str, Judgement] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    calls: int = 0
    unfounded: list[str] = field(default_factory=list)
    unreliable: bool = False


def judgement_key(checked: CheckedClaim) -> str:
    """A claim's words and the sources it cites by URL: the same in a renumbered or resubmitted report."""
    sources = sorted({s.url or s.title for s in checked.record.sources})
    return checked.claim.key + " |" + "|".join(sources)


# --- the prompt ------------------------------------------------------------------------------------


def _passages_of(
    checked: CheckedClaim, library: EvidenceLibrary, signals: Sequence[PassageSignal]
) -> list[tuple[int, EvidenceText, Span]]:
    facts = ClaimFacts.of(checked.claim)
    found: list[tuple[int, EvidenceText, Span]] = []
    for source in checked.record.sources:
        texts = [t for t in library.for_source(source.url or source.title) if t.read]
        for text in texts[:2]:
            spans = choose_passages(facts, text, count=PASSAGES_PER_SOURCE, signals=signals)
            found.extend((source.index, text, span) for span in sorted(spans))
    return found


def judge_batches(
    check: ClaimCheck,
    library: EvidenceLibrary,
    *,
    skip: frozenset[str] = frozenset(),
    batch_claims: int = BATCH_CLAIMS,
    control: bool = True,
    signals: Sequence[PassageSignal] = SIGNALS,
) -> list[JudgeBatch]:
    """The prompts that judge every judgeable claim of ``check`` whose key is not in ``skip``, each with a
    planted control claim when ``control`` (``judge_guard.py``), their passages chosen by ``signals``
    (``passages.with_meaning`` adds meaning)."""
    judgeable = {id(c) for c in check.judgeable()}
    wanted = [
        (position, checked)
        for position, checked in enumerate(check.checked)
        if id(checked) in judgeable and judgement_key(checked) not in skip
    ]
    batches: list[JudgeBatch] = []
    for start in range(0, len(wanted), batch_claims):
        texts: dict[tuple[str, int], tuple[int, str, str]] = {}  # by (evidence id, offset): [n], id, sentence
        drafts: list[tuple[int, str, str, tuple[int, ...], ClaimFacts | None, list[tuple[str, int]]]] = []
        for position, checked in wanted[start : start + batch_claims]:
            own = []
            for index, text, span in _passages_of(checked, library, signals):
                texts.setdefault((text.id, span[0]), (index, text.id, text.sentence(span)))
                own.append((text.id, span[0]))
            if own:
                claim = " ".join(_CITATION_RE.sub("", checked.claim.text).replace("[unverified]", "").split())
                facts = ClaimFacts.of(checked.claim)
                drafts.append((position, judgement_key(checked), claim, checked.claim.indexes, facts, own))
        if not drafts:
            continue
        order = list(texts)
        if control:
            pair, number = control_for(draft[1] for draft in drafts)
            index = max(n for draft in drafts for n in draft[3]) + 1
            texts[("control", 0)] = (index, "", pair.passage)
            order.insert(number % (len(order) + 1), ("control", 0))
            number //= len(order)
            control_draft = (CONTROL, "control", pair.claim, (index,), None, [("control", 0)])
            drafts.insert(number % (len(drafts) + 1), control_draft)
        passages = {key: Passage(f"P{n}", *texts[key]) for n, key in enumerate(order, start=1)}
        items = tuple(
            JudgeItem(f"C{n}", position, key, claim, indexes, tuple(passages[k] for k in own), facts)
            for n, (position, key, claim, indexes, facts, own) in enumerate(drafts, start=1)
        )
        batches.append(JudgeBatch(items, tuple(passages.values())))
    return batches


# --- the answer ------------------------------------------------------------------------------------


def _json_of(reply: str) -> Any:
    text = _THINKING_RE.sub(" ", reply).strip()
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        for opening, closing in (("{", "}"), ("[", "]")):
            start, end = candidate.find(opening), candidate.rfind(closing)
            if start != -1 and end > start:
                try:
                    return json.loads(candidate[start : end + 1])
                except ValueError:
                    continue
    raise JudgeReplyError("the answer holds no JSON")


def _entries(data: Any) -> list[tuple[Any, Any]]:
    """(claim id, answer) pairs from the shapes a model answers in."""
    if isinstance(data, dict):
        for key in ("verdicts", "claims", "results", "judgements", "judgments", "answers"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            if any(isinstance(k, str) and _ID_RE.match(k) for k in data):
                return [(k, v) for k, v in data.items()]
            data = [data]
    if not isinstance(data, list):
        return []
    pairs = []
    for entry in data:
        if isinstance(entry, dict):
            claim = next((entry[k] for k in ("claim", "id", "claim_id", "c") if k in entry), None)
            pairs.append((claim, entry))
    return pairs


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = _ID_RE.match(str(value)) if value is not None else None
    return int(match.group(1)) if match else None


def _verdict(value: Any) -> ClaimVerdict | None:
    if not isinstance(value, str):
        return None
    return _VERDICTS.get(re.sub(r"[\s-]+", "_", value.strip().strip(".").casefold()))


def parse_reply(reply: str, batch: JudgeBatch) -> dict[int, Judgement]:
    """The judge's verdicts by claim position (see the module's contract)."""
    data = _json_of(reply)
    by_number = {int(item.id[1:]): item for item in batch.items}
    passages = {int(p.id[1:]): p for p in batch.passages}
    found: dict[int, Judgement] = {}
    for claim, answer in _entries(data):
        item = by_number.get(number) if (number := _number(claim)) is not None else None
        if item is None:
            continue
        if isinstance(answer, str):
            answer = {"verdict": answer}
        if not isinstance(answer, dict):
            continue
        verdict = _verdict(next((answer[k] for k in ("verdict", "label", "answer", "result") if k in answer), None))
        if verdict is None:
            continue
        raw_passage = next((answer[k] for k in ("passage", "sentence", "evidence", "source") if k in answer), None)
        passage = passages.get(named) if (named := _number(raw_passage)) is not None else None
        if passage is not None and passage not in item.passages:
            passage = passage if passage.index in item.indexes else None
        reason = " ".join(str(answer.get("reason") or answer.get("explanation") or "").split())[:REASON_CHARS]
        found[item.position] = Judgement(
            verdict=verdict,
            reason=reason,
            index=passage.index if passage else None,
            evidence_id=passage.evidence_id if passage else None,
            sentence=passage.text if passage else "",
        )
    if not found:
        raise JudgeReplyError("the answer names no verdict for any claim it was asked about")
    return found


# --- running it ------------------------------------------------------------------------------------


async def run_judge(
    check: ClaimCheck,
    library: EvidenceLibrary,
    call: JudgeCall,
    *,
    timeout: float,
    known: Mapping[str, Judgement] | None = None,
    batch_claims: int = BATCH_CLAIMS,
    control: bool = True,
    signals: Sequence[PassageSignal] = SIGNALS,
) -> JudgeOutcome:
    """Judge every judgeable claim not judged before, every batch at once (see the module's contract)."""
    known = dict(known or {})
    present = {judgement_key(c) for c in check.judgeable()}
    judgements = {key: judgement for key, judgement in known.items() if key in present}
    # In a thread: choosing passages by meaning embeds the cited texts' sentences (a second or more).
    batches = await asyncio.to_thread(
        judge_batches,
        check,
        library,
        skip=frozenset(judgements),
        batch_claims=batch_claims,
        control=control,
        signals=signals,
    )
    if not batches:
        return JudgeOutcome(judgements)

    async def one(batch: JudgeBatch) -> dict[int, Judgement]:
        reply = await asyncio.wait_for(call(batch.system, batch.user), timeout=timeout or None)
        return parse_reply(reply, batch)

    results = await asyncio.gather(*(one(batch) for batch in batches), return_exceptions=True)
    failures: list[str] = []
    unfounded: list[str] = []
    for batch, result in zip(batches, results, strict=True):
        claims = f"{len(batch.claims)} claim{'s' if len(batch.claims) != 1 else ''}"
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
                raise result
            failures.append(f"{claims}: {_failure(result, timeout)}")
            continue
        if control:
            planted = result.get(CONTROL)
            if planted is not None and planted.verdict == ClaimVerdict.SUPPORTED:
                return JudgeOutcome(failures=failures, calls=len(batches), unreliable=True)
            if planted is None:
                failures.append(
                    f"{claims}: the control claim was not answered, so none of this batch's verdicts was used"
                )
                continue
        for item in batch.claims:
            if item.position in result:
                judgement = _held_to_its_passage(result[item.position], item)
                unfounded += [item.claim] if judgement.verdict == ClaimVerdict.UNCHECKED else []
                judgements[item.key] = judgement
        unanswered = sum(item.position not in result for item in batch.claims)
        if unanswered:
            failures.append(f"{unanswered} of {claims}: not answered")
    return JudgeOutcome(judgements, failures, calls=len(batches), unfounded=unfounded)


def _held_to_its_passage(judgement: Judgement, item: JudgeItem) -> Judgement:
    """A ``supported`` verdict that names no passage sharing the claim's content, or gives no reason about it,
    becomes ``unchecked``, saying why (``judge_guard.unfounded_support``)."""
    if judgement.verdict != ClaimVerdict.SUPPORTED or item.facts is None:
        return judgement
    why = unfounded_support(item.facts, judgement.sentence or None, judgement.reason)
    if why is None:
        return judgement
    return Judgement(verdict=ClaimVerdict.UNCHECKED, reason=why)


def _failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, JudgeReplyError):
        return f"unparseable answer ({exc})"
    return f"{type(exc).__name__}: {str(exc)[:160]}".rstrip(": ")


def failure_detail(failures: Sequence[str]) -> str:
    """The warning's words for the batches that failed."""
    return (
        "The claim judge did not decide every claim it was given ("
        + "; ".join(failures)
        + "): those claims keep the verdicts of the checks on their figures, quotes and names."
    )


UNRELIABLE_DETAIL = (
    "The claim judge called a planted control claim (a false sentence added to its batch, never to the report) "
    "supported: it is unreliable for this run, and none of its verdicts was used. The claims only it could "
    "check are delivered unchecked."
)


def unfounded_claims(check: ClaimCheck, judgements: Mapping[str, Judgement]) -> list[str]:
    """The claims of ``check`` whose ``supported`` verdict did not hold (the judge never answers ``unchecked``)."""
    return [
        c.record.claim
        for c in check.checked
        if (judgement := judgements.get(judgement_key(c))) is not None
        and judgement.verdict == ClaimVerdict.UNCHECKED
        and c.record.verdict == ClaimVerdict.UNCHECKED
    ]


def unfounded_detail(claims: Sequence[str]) -> str:
    """The warning's words for the ``supported`` verdicts that did not hold."""
    shown = "; ".join(f"“{claim[:80]}”" for claim in claims[:3]) + (
        f" and {len(claims) - 3} more" if len(claims) > 3 else ""
    )
    return (
        f"The claim judge called {len(claims)} claim{'s' if len(claims) != 1 else ''} supported without naming a "
        f"passage that shares its content, or without a reason about it ({shown}): delivered unchecked."
    )


# --- applying it -----------------------------------------------------------------------------------


def apply_judgements(check: ClaimCheck, judgements: Mapping[str, Judgement]) -> ClaimCheck:
    """``check`` with the judge's verdicts on the claims it judged (see the module's contract)."""
    if not judgements:
        return check
    judgeable = {id(c) for c in check.judgeable()}
    updated = {}
    for position, checked in enumerate(check.checked):
        if id(checked) not in judgeable:
            continue
        judgement = judgements.get(judgement_key(checked))
        if judgement is None:
            continue
        verdict = ClaimVerdict(judgement.verdict)
        sources = [
            source.model_copy(
                update={"sentence": judgement.sentence, "deciding": True, "evidence_id": judgement.evidence_id}
            )
            if judgement.index is not None and source.index == judgement.index and judgement.sentence
            else source
            for source in checked.record.sources
        ]
        unchecked = verdict == ClaimVerdict.UNCHECKED
        record = checked.record.model_copy(
            update={
                "verdict": verdict,
                "decided_by": ClaimMethod.NOT_CHECKED if unchecked else ClaimMethod.JUDGED,
                "detail": judgement.reason,
                "tokens": [],
                "sources": checked.record.sources if unchecked else sources,
            }
        )
        hints: tuple[str, ...] = ()
        if verdict.flags:
            deciding = [s for s in sources if s.deciding] or [s for s in sources if s.sentence]
            hints = tuple(f"[{s.index}] says: “{s.sentence}”" for s in deciding[:2])
        updated[position] = (record, hints)
    return check.with_records(updated)
