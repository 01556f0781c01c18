"""What keeps the claim judge from rubber-stamping: a planted control claim, and the rule a ``supported``
verdict is held to.

Contract:
- ``control_for(keys)`` picks, by a stable hash of a batch's claim keys, one pair of ``CONTROL_CLAIMS``: a
  passage and a sentence that passage contradicts, sharing most of its words, so a judge that reads agrees it
  is false and one that does not calls it supported. ``judge.py`` plants it in every batch (never in the
  report), at a position the same hash picks; a judge that calls it supported is unreliable for the run, and
  none of its verdicts is used.
- ``unfounded_support(facts, passage, reason)`` says why a ``supported`` verdict does not hold, or None: it
  names no passage, the passage it names holds under ``GROUNDING`` of the claim's figures, names and
  content words (``passages.shared_content``), or its reason is empty or boilerplate (no word of the claim
  or the passage beyond the vocabulary of verdicts: "...", "The passage supports the claim."). Such a
  verdict is delivered ``unchecked``.

Measured on the labelled claims (``bench/judge_passages.py``): the deciding passage of every correct claim
holds at least ``GROUNDING`` of it, so a judge that names the right passage is never downgraded there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ..evidence.text import content_words
from .passages import ClaimFacts, shared_content, stems

# A supported verdict's passage must hold at least this share of the claim's figures, names and words.
GROUNDING = 0.5


@dataclass(frozen=True)
class ControlClaim:
    passage: str
    claim: str  # what the passage contradicts


CONTROL_CLAIMS: tuple[ControlClaim, ...] = (
    ControlClaim(
        "The reading room of the city archive closed in 2019 for repairs and has not reopened since.",
        "The reading room of the city archive reopened to visitors in 2021 after its repairs.",
    ),
    ControlClaim(
        "The survey counted 412 nesting pairs on the island, down from 530 pairs a decade earlier.",
        "The survey counted more nesting pairs on the island than a decade earlier.",
    ),
    ControlClaim(
        "The bridge was designed by engineers from Lisbon and opened to traffic in 1966.",
        "The bridge was designed by engineers from Madrid and opened to traffic in 1966.",
    ),
    ControlClaim(
        "In the twelve-week trial, the drug had no measurable effect on blood pressure.",
        "In the twelve-week trial, the drug markedly lowered blood pressure.",
    ),
    ControlClaim(
        "The cooperative sells all of its wheat to mills within the region and exports none of it.",
        "The cooperative exports most of its wheat to mills abroad.",
    ),
    ControlClaim(
        "The museum's east wing was built of local limestone in 1887.",
        "The museum's east wing was built of imported marble in 1887.",
    ),
)

# The words a verdict's reason may use without saying anything about the claim.
_VERDICT_WORDS = stems(
    content_words(
        """claim claims passage passages support supports supported supporting state states stated statement
        says say said text source sources verdict sentence correct true accurate accurately mention mentions
        mentioned information given provided consistent match matches matching evidence confirm confirms
        confirmed explicit explicitly directly clearly clear indicate indicates indicated described describes
        agrees agree fact facts detail details based scripted judged judge yes"""
    )
)


def control_for(keys: Iterable[str]) -> tuple[ControlClaim, int]:
    """The control pair for a batch whose claims have these keys, and a number to place it by."""
    digest = hashlib.sha256("\n".join(keys).encode("utf-8")).digest()
    number = int.from_bytes(digest[:8], "big")
    return CONTROL_CLAIMS[number % len(CONTROL_CLAIMS)], number // len(CONTROL_CLAIMS)


def unfounded_support(facts: ClaimFacts, passage: str | None, reason: str) -> str | None:
    """Why a ``supported`` verdict on a claim does not hold, or None when it does (see the module's contract)."""
    if not passage:
        return "the judge called it supported but named no passage of its sources"
    if shared_content(facts, passage) < GROUNDING:
        return "the judge called it supported on a passage that does not share its content"
    if _boilerplate(facts, passage, reason):
        return "the judge called it supported without a reason about it"
    return None


def _boilerplate(facts: ClaimFacts, passage: str, reason: str) -> bool:
    said = stems(content_words(reason)) - _VERDICT_WORDS
    about = facts.word_stems | stems(w for name in facts.names for w in name) | stems(content_words(passage))
    if said & about:
        return False
    return not any(figure.text in reason for figure in facts.figures)
