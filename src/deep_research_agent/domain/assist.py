"""Whether an agent's model gets the assist (the help that makes a small model follow the research loop), and why.

The decision is the ``assist`` package's (``assist/switch.py``); this is its record, which the ``run_start``
event carries per agent role, so a client sees what a run's models were helped with.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class AssistReason(StrEnum):
    """Why an agent's model gets the assist or not (``model_assist`` and what it read)."""

    # ``model_assist`` set on or off.
    SET_ON = "set_on"
    SET_OFF = "set_off"
    # ``auto``: the slot's model is one of the tiers' hosted models, whatever the endpoint.
    HOSTED_MODEL = "hosted_model"
    # ``auto``: the slot is declared small or without native tool calling (``small_model_slots``).
    DECLARED_SMALL = "declared_small"
    # ``auto``: the model's name is of a known small family, or names a size under 4B parameters.
    SMALL_FAMILY = "small_family"
    # ``auto``: the run is on the ``local`` profile.
    LOCAL_PROFILE = "local_profile"
    # ``auto``: nothing says the model is small.
    NOT_SMALL = "not_small"


class AssistDecision(BaseModel):
    """One agent's assist: on or off, why, and the model it was decided for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    on: bool
    reason: AssistReason
    model: str = Field(description="The model of the agent's slot the decision was made for.")
