"""The reviewer's answer to a proposed plan, read strictly: one decision the plan can take, or why not.

Contract:
- ``read_review_answer(answer, rules)`` takes the value a client resumed the plan review with (langchain's
  human-in-the-loop format, ``{"decisions": [one decision]}``) and returns the ``ReviewDecision``, or raises
  ``ReviewAnswerError`` whose text says what is wrong, for the reviewer to read: anything but an object
  holding exactly ``decisions``, a list of exactly one decision (the plan is one action request), whose
  ``type`` is exactly ``approve``, ``edit`` or ``reject``, with no key its type does not have (so a typo'd
  key is never taken for a decision with the key left out);
- an ``edit`` carries ``edited_action.args.units``: a list of units, or that list as JSON text (agent-chat-ui
  sends each edited argument as the text of its form field); each unit has a non-blank ``brief`` and only
  a unit's keys; ``args.cost_estimate`` (the UIs send back what they were shown) is ignored, since the plan's
  estimate is recomputed from its units; ``edited_action.name``, when given, is ``propose_plan``;
- every plan that starts, proposed, approved or edited, passes ``PlanRules.problem``: at least one unit, at
  most ``max_units`` (``plan_max_units``; 0: no limit), each for one of the run's ``subagent_types``.

Why not langchain's ``HumanInTheLoopMiddleware`` parsing: it reads a decision with ``decision["type"]`` and
trusts the rest, and its unknown types raise a ``ValueError`` that would fail the run, not keep it paused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .knobs import KnobError
from .names import ToolName
from .plan import PlanUnit

DECISIONS = ("approve", "edit", "reject")
DecisionType = Literal["approve", "edit", "reject"]
# The keys each decision type has besides ``type`` (langchain's ApproveDecision, EditDecision, RejectDecision).
_DECISION_KEYS: dict[str, frozenset[str]] = {
    "approve": frozenset(),
    "edit": frozenset({"edited_action"}),
    "reject": frozenset({"message"}),
}
_SHAPE = '{"decisions": [{"type": "approve"}]}'


class ReviewAnswerError(ValueError):
    """The answer to a plan review is not one decision the plan can take; the text says what is wrong."""


@dataclass(frozen=True)
class ReviewDecision:
    """One valid decision: ``units`` are an edit's units, ``message`` a rejection's words (may be empty)."""

    type: DecisionType
    units: tuple[PlanUnit, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class PlanRules:
    """What a plan must be to start: 1 to ``max_units`` units (0: no limit), each for one of ``subagent_types``."""

    max_units: int
    subagent_types: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.max_units, bool) or not isinstance(self.max_units, int) or self.max_units < 0:
            raise KnobError("PlanRules", "max_units", self.max_units, "a whole number of 0 or more (0: no limit)")
        if not self.subagent_types or not all(isinstance(name, str) for name in self.subagent_types):
            raise KnobError("PlanRules", "subagent_types", self.subagent_types, "the names of one or more sub-agents")

    def problem(self, units: Sequence[PlanUnit]) -> str:
        """Why ``units`` cannot start as a plan, as a clause; ``""`` when they can."""
        if not units:
            return "the plan has no units (to start nothing, reject the plan)"
        if len(units) > self.max_units > 0:
            return (
                f"the plan has {len(units)} units and a plan may have at most {self.max_units} "
                "(plan_max_units): merge units or drop some"
            )
        for number, unit in enumerate(units, 1):
            if unit.subagent_type not in self.subagent_types:
                return (
                    f'unit {number} is for the sub-agent "{unit.subagent_type}", which this run does not have; '
                    f"its sub-agents are {', '.join(self.subagent_types)}"
                )
        return ""


class _EditedUnit(PlanUnit):
    model_config = ConfigDict(extra="forbid")


class _EditedArgs(BaseModel):
    """The edited plan's arguments, as the reviewer's client sends them back."""

    model_config = ConfigDict(extra="forbid")

    units: list[_EditedUnit]
    cost_estimate: Any = None

    @field_validator("units", mode="before")
    @classmethod
    def _units_as_json_text(cls, units: Any) -> Any:
        if not isinstance(units, str):
            return units
        try:
            return json.loads(units)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the units are text that is not JSON ({exc.msg} at character {exc.pos})") from None


def read_review_answer(answer: Any, rules: PlanRules) -> ReviewDecision:
    """The one decision ``answer`` holds, checked against ``rules``; raises ``ReviewAnswerError`` otherwise."""
    if not isinstance(answer, dict):
        raise ReviewAnswerError(f"the answer must be an object such as {_SHAPE}, not {_kind(answer)}")
    if set(answer) != {"decisions"}:
        others = _quoted(sorted(set(answer) - {"decisions"}))
        if "decisions" not in answer:
            raise ReviewAnswerError(f'the answer has no "decisions" (it has {others}); send {_SHAPE}')
        raise ReviewAnswerError(f'the answer has keys besides "decisions": {others}; send {_SHAPE}')
    decisions = answer["decisions"]
    if not isinstance(decisions, list):
        raise ReviewAnswerError(f'"decisions" must be a list holding one decision, not {_kind(decisions)}')
    if len(decisions) != 1:
        raise ReviewAnswerError(
            f'"decisions" must hold exactly one decision, for the plan\'s one action request; it holds {len(decisions)}'
        )
    decision = decisions[0]
    if not isinstance(decision, dict):
        raise ReviewAnswerError(f'the decision must be an object such as {{"type": "approve"}}, not {_kind(decision)}')
    kind = decision.get("type")
    if kind not in DECISIONS:
        got = f"it is {_kind(kind)}" if "type" in decision else "it has none"
        raise ReviewAnswerError(f'the decision\'s "type" must be "approve", "edit" or "reject"; {got}')
    unknown = sorted(set(decision) - {"type"} - _DECISION_KEYS[kind])
    if unknown:
        allowed = _quoted(sorted({"type", *_DECISION_KEYS[kind]}))
        raise ReviewAnswerError(f"the {kind} decision has unknown keys {_quoted(unknown)}; it has only {allowed}")
    if kind == "reject":
        message = decision.get("message", "")
        if not isinstance(message, str):
            raise ReviewAnswerError(f'the reject decision\'s "message" must be text, not {_kind(message)}')
        return ReviewDecision(type="reject", message=message.strip())
    if kind == "approve":
        return ReviewDecision(type="approve")
    units = _edited_units(decision.get("edited_action"))
    if problem := rules.problem(units):
        raise ReviewAnswerError(f"the edited plan cannot start: {problem}")
    return ReviewDecision(type="edit", units=units)


def _edited_units(action: Any) -> tuple[PlanUnit, ...]:
    if not isinstance(action, dict) or not isinstance(action.get("args"), dict):
        raise ReviewAnswerError(
            'an edit decision carries the edited plan as "edited_action": {"name": "propose_plan", "args": '
            '{"units": [...]}}'
        )
    if unknown := sorted(set(action) - {"name", "args"}):
        raise ReviewAnswerError(f'"edited_action" has unknown keys {_quoted(unknown)}; it has only "name" and "args"')
    if action.get("name", ToolName.PROPOSE_PLAN.value) != ToolName.PROPOSE_PLAN:
        raise ReviewAnswerError(f'"edited_action" must name "{ToolName.PROPOSE_PLAN}", not {_kind(action["name"])}')
    try:
        args = _EditedArgs.model_validate(action["args"])
    except ValidationError as exc:
        raise ReviewAnswerError(f"the edited plan is not valid: {_first_problem(exc)}") from None
    return tuple(PlanUnit.model_validate(unit.model_dump()) for unit in args.units)


def _first_problem(exc: ValidationError) -> str:
    """The first of a validation's errors in words, with how many more there are."""
    # An unknown key first: a typo'd key also leaves the key it meant missing.
    errors = sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden")
    first = errors[0]
    where = _where(first["loc"])
    if first["type"] == "extra_forbidden":
        of_unit = first["loc"][0] == "units" and len(first["loc"]) > 2
        text = f"{where} is unknown" + (f" (a unit has {_quoted(list(PlanUnit.model_fields))})" if of_unit else "")
    elif first["type"] == "missing":
        text = f"{where} is missing"
    else:
        text = f"{where}: {str(first['msg']).removeprefix('Value error, ')}"
    more = len(errors) - 1
    return text + (f" (and {more} more problem{'s' if more != 1 else ''})" if more else "")


def _where(loc: tuple[int | str, ...]) -> str:
    """A validation error's place: ``("units", 0, "brief")`` is 'unit 1\'s "brief"'."""
    if len(loc) >= 2 and loc[0] == "units" and isinstance(loc[1], int):
        unit = f"unit {loc[1] + 1}"
        return f'{unit}\'s "{loc[2]}"' if len(loc) > 2 else unit
    return ".".join(f'"{part}"' if isinstance(part, str) else str(part) for part in loc) or "the edited plan"


def _kind(value: Any) -> str:
    """How a JSON value is named in an error: its type, and a short text its value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return f'the text "{value[:40]}{"…" if len(value) > 40 else ""}"'
    if isinstance(value, list):
        return "a list"
    return "an object"


def _quoted(keys: Sequence[str]) -> str:
    return ", ".join(f'"{key}"' for key in keys)
