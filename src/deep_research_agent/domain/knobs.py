"""A middleware's own knobs, checked where it is built: a value that makes no sense is refused there.

Every middleware takes the few values it uses as constructor parameters (or one small frozen record of
them defined beside it), never the run's whole settings, and refuses a bad one at once with a
``KnobError`` that names the owner, the parameter and the rule, the way langchain's call-limit middleware
do. The graph hands each one its knobs from the resolved settings, which never hold a negative number or
a non-finite one, so a refusal is a programming error found when the graph is built, not at a run's end.
"""

from __future__ import annotations

import math

__all__ = ["KnobError", "callable_knob", "not_negative", "positive"]


class KnobError(ValueError):
    """A constructor refused one of its knobs; ``owner`` and ``parameter`` name it."""

    def __init__(self, owner: str, parameter: str, value: object, rule: str) -> None:
        self.owner = owner
        self.parameter = parameter
        self.value = value
        super().__init__(f"{owner}: {parameter} must be {rule}, got {value!r}")


def _number(owner: str, parameter: str, value: object, rule: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise KnobError(owner, parameter, value, rule)
    return float(value)


def not_negative(owner: str, parameter: str, value: object) -> None:
    """Refuse anything but a finite number of 0 or more (0 usually means "no cap")."""
    rule = "a finite number of 0 or more"
    if _number(owner, parameter, value, rule) < 0:
        raise KnobError(owner, parameter, value, rule)


def positive(owner: str, parameter: str, value: object) -> None:
    """Refuse anything but a finite number above 0."""
    rule = "a finite number above 0"
    if _number(owner, parameter, value, rule) <= 0:
        raise KnobError(owner, parameter, value, rule)


def callable_knob(owner: str, parameter: str, value: object, *, optional: bool = False) -> None:
    """Refuse a hook or factory that cannot be called (``optional``: None is accepted too)."""
    if not callable(value) and not (optional and value is None):
        raise KnobError(owner, parameter, value, "callable" + (" or None" if optional else ""))
