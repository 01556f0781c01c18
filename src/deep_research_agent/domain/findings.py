"""A research unit's hand-over as data: its findings, each a claim with its evidence and source.

The shape the research sub-agents hand back and the orchestrator, the report checks, the task diff and the
events all read; the rules that validate a sub-agent's message live in ``handover/contract.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Finding(BaseModel):
    model_config = ConfigDict(extra="ignore")

    finding: str
    evidence: str = ""
    source: str
    # Set at the hand-over, never by a sub-agent: ``quote_not_found`` when ``evidence`` is in no text the run
    # retrieved from ``source`` (``handover/contract.quotes_checked``).
    check: Literal["quote_not_found"] | None = None

    @field_validator("finding", "evidence", "source", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value).strip()


class Findings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)

    @field_validator("gaps", mode="before")
    @classmethod
    def _gap_list(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value] if value.strip() else []
        return [str(v) for v in value if str(v).strip()]

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)
