"""The findings contract between a research sub-agent and the orchestrator.

A sub-agent's final message is one JSON object ``{summary, findings: [{finding, evidence, source}], gaps}``.
Models wrap it in fences or prose, so ``parse_findings`` takes the last JSON object in the text that has
``summary`` or ``findings``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class Finding(BaseModel):
    model_config = ConfigDict(extra="ignore")

    finding: str
    evidence: str = ""
    source: str

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
        return self.model_dump_json()


def last_findings_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that carries ``summary`` or ``findings``, wherever it sits."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict) and ("summary" in value or "findings" in value):
            found = value
        index = text.find("{", end)
    return found


def parse_findings(text: str) -> Findings | None:
    """The findings object in a sub-agent's final message, or None when there is none that validates."""
    raw = last_findings_object(text)
    if raw is None:
        return None
    try:
        return Findings.model_validate(raw)
    except ValidationError:
        return None
