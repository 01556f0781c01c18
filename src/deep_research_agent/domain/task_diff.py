"""A figure of a source that changed between two runs of a named task (``tasks/diff.py`` finds them)."""

from __future__ import annotations

from pydantic import BaseModel


class MovedFigure(BaseModel):
    source: str
    before: str
    after: str
