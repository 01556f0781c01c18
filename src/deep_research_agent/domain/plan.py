"""The research plan a user reviews before its units start (``plan_review``), and its cost estimate.

``PlanUnit`` is one unit as the orchestrator proposes it and as a reviewer may edit it; ``PlanEstimate`` is
what the plan is expected to cost, shown with the plan and compared with the run's actual cost at its end.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class PlanUnit(BaseModel):
    """One research unit of a proposed plan: the brief its sub-agent gets, verbatim."""

    model_config = ConfigDict(extra="ignore")

    brief: str = Field(min_length=1, description="The self-contained brief the sub-agent gets, verbatim.")
    subagent_type: str = Field(default="research-subagent", description="The sub-agent that works on the unit.")
    expected_sources: list[str] = Field(
        default_factory=list, description="Where the unit expects to find its evidence (kinds of sources or sites)."
    )

    @field_validator("brief")
    @classmethod
    def _brief_has_words(cls, brief: str) -> str:
        if not brief.strip():
            raise ValueError("a brief must say what to research: this one is blank")
        return brief


class PlanEstimate(BaseModel):
    """What a plan is expected to cost at the tier's prices, within the run's budgets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    units: int
    tokens: int = Field(
        description="Expected tokens of the whole run: every unit plus the orchestrator's planning and report."
    )
    cost_usd: float = Field(description="The expected tokens at the tier's prices.")
    ceiling_usd: float | None = Field(
        default=None,
        description="The most the run's budgets let it spend: max_cost_usd when set, else its token ceiling at the "
        "dearest slot's prices; None when the run has neither cap.",
    )
    capped: bool = Field(default=False, description="The expectation was above the run's budgets and is cut to them.")


def estimate_deviation(estimate: PlanEstimate, actual_usd: float) -> float | None:
    """How far the actual cost ended from the estimate, as a fraction of it (+0.25: 25 % over); None when the
    estimate is zero (an unpriced model), where no fraction means anything."""
    if estimate.cost_usd <= 0:
        return None
    return round(actual_usd / estimate.cost_usd - 1, 4)
