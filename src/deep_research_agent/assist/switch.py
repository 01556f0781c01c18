"""Which agents get the assist: ``model_assist`` (auto | on | off), decided once per slot model.

Contract (``decide_assist``):
- ``on`` and ``off`` apply to every agent, whatever its model;
- ``auto`` never helps one of the tiers' hosted models (``MODEL_TIERS``' names), whatever the endpoint's host:
  a frontier model gets the prompt it was designed for. Any other model is helped when its slot is declared
  small or without native tool calling (``small_model_slots``), when its name is of a known small family
  (``is_small_model``), or when the run is on the ``local`` profile; otherwise not;
- the decision names its reason and the model (``AssistDecision``), for the ``run_start`` event.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from ..domain.assist import AssistDecision, AssistReason
from ..domain.knobs import KnobError
from ..settings import MODEL_TIERS, SLOTS

__all__ = ["KNOWN_SMALL_FAMILIES", "SMALL_BELOW_BILLIONS", "decide_assist", "hosted_models", "is_small_model"]

# Families of small chat models whose names carry no size (docs/local-models.md lists them).
KNOWN_SMALL_FAMILIES = ("smollm", "tinyllama", "phi-3-mini", "phi-3.5-mini", "phi-4-mini")
# A name that states a size below this many billion parameters is a small model: 0.5b, 1.5b, 3b, 135m, 270m.
SMALL_BELOW_BILLIONS = 4.0
# A size in millions under this is a context length, not a parameter count (Qwen2.5-7B-Instruct-1M).
_MIN_MILLIONS = 10
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")
_MODES = ("auto", "on", "off")


def hosted_models() -> frozenset[str]:
    """The names of the tiers' models: hosted frontier models that ``auto`` never helps."""
    return frozenset(tier.slot(slot).slug for tier in MODEL_TIERS.values() for slot in SLOTS)


def is_small_model(name: str) -> bool:
    """Whether the model ``name`` is of a known small family, or states a size under ``SMALL_BELOW_BILLIONS``
    (``qwen2.5-coder-0.5b``, ``qwen2.5:1.5b``, ``gemma-3-270m``; not ``qwen2.5-7b``, ``qwen2.5-7b-instruct-1m``
    nor ``qwen3-30b-a3b``, whose largest size is the model's)."""
    lowered = name.strip().lower()
    if any(family in lowered for family in KNOWN_SMALL_FAMILIES):
        return True
    sizes = _SIZE.findall(lowered)
    # A size in billions is the parameter count; one in millions only where none is (smollm2-135m, gemma-3-270m).
    billions = [float(number) for number, unit in sizes if unit == "b"] or [
        float(number) / 1000 for number, unit in sizes if unit == "m" and float(number) >= _MIN_MILLIONS
    ]
    return bool(billions) and 0 < max(billions) < SMALL_BELOW_BILLIONS


def decide_assist(
    mode: str, *, model: str, declared_small: bool, local_profile: bool, hosted: Collection[str] | None = None
) -> AssistDecision:
    """Whether the agent on ``model`` gets the assist under ``mode``; ``declared_small``: its slot is in
    ``small_model_slots``; ``local_profile``: the run is on ``DRA_PROFILE=local``; ``hosted``: the names
    ``auto`` never helps (the tiers' models by default).

    Raises:
        KnobError: ``mode`` is not auto, on or off.
    """
    if mode not in _MODES:
        raise KnobError("decide_assist", "mode", mode, "auto, on or off")
    if mode != "auto":
        return AssistDecision(on=mode == "on", reason=AssistReason(f"set_{mode}"), model=model)
    if model in (hosted_models() if hosted is None else hosted):
        return AssistDecision(on=False, reason=AssistReason.HOSTED_MODEL, model=model)
    for helped, reason in (
        (declared_small, AssistReason.DECLARED_SMALL),
        (is_small_model(model), AssistReason.SMALL_FAMILY),
        (local_profile, AssistReason.LOCAL_PROFILE),
    ):
        if helped:
            return AssistDecision(on=True, reason=reason, model=model)
    return AssistDecision(on=False, reason=AssistReason.NOT_SMALL, model=model)
