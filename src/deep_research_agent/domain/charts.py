"""A chart in a report: the spec a model writes in a ```` ```chart ```` block, and what the checks found.

Contract:
- ``parse_chart(text)`` reads one block's JSON into a ``ChartSpec`` or raises ``ChartSpecError`` whose
  message says what to fix (non-numeric values, columns instead of points, too many points, an unknown
  kind, a title with markup, an unknown field). The fields the product writes on delivery (``id``,
  ``caption``, ``drawn``, ``reason``, a point's ``check``) are dropped from what a model writes, so a chart
  copied from an earlier report is checked afresh, never taken as checked;
- ``ChartRecord`` is a delivered chart: the spec, one ``PointCheck`` per point, whether it is drawn, the
  caption saying what was checked, and ``id`` (a digest of the spec, so the same chart has the same address).
  It is written back into the report as the block's JSON (``to_block``), so the report alone carries its
  charts, and every reader (the web UI, the exports, the image route) draws them from that text;
- nothing here draws or checks: ``report/charts.py`` checks, ``export/charts.py`` draws.

Why not pydantic's own errors: they name types and locations ("Input should be a valid number"), not what
the writer of a report should change.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from enum import StrEnum
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, ValidationError

CHART_LANGUAGE = "chart"
# How many charts a report may hold unless the run says otherwise (``max_charts``).
DEFAULT_MAX_CHARTS = 3
MAX_POINTS = 200
MAX_TITLE_CHARS = 120
MAX_LABEL_CHARS = 60
# Markup a title or label may not carry: Markdown emphasis, links and code, HTML tags, line breaks.
_MARKUP_RE = re.compile(r"[<>`*_\[\]#|\\]|\n|\r|!\[|\]\(|&[a-z]+;", re.IGNORECASE)
_SPEC_FIELDS = ("kind", "title", "x_label", "y_label", "unit", "points")
_POINT_FIELDS = ("x", "y", "cite")
# What the product writes into a delivered block; a model's copy of them is dropped, never trusted.
_PRODUCT_FIELDS = ("id", "caption", "drawn", "reason")
_PRODUCT_POINT_FIELDS = ("check",)


# The product's route for chart images (``routes.py``): ``/charts/{thread_id}[/{run_id}]/{chart_id}.png|svg``.
CHARTS_PATH = "/charts"


def chart_path(thread_id: str, run_id: str | None, chart_id: str, image: str = "png") -> str:
    """The path of a chart's image on this server: a run's own, so an earlier turn's message keeps its picture."""
    run = f"/{quote(run_id, safe='')}" if run_id else ""
    return f"{CHARTS_PATH}/{quote(thread_id, safe='')}{run}/{chart_id}.{image}"


class ChartKind(StrEnum):
    BAR = "bar"
    LINE = "line"
    SCATTER = "scatter"


class PointVerdict(StrEnum):
    """What the check of one point found (``report/charts.py``)."""

    SUPPORTED = "supported"
    # The cited source was never read in full (only a snippet, not retrieved, or not in the Sources list).
    SOURCE_NOT_READ = "source_not_read"
    # The value, in its unit, is in none of the cited source's text.
    UNSUPPORTED_VALUE = "unsupported_value"
    # The value is in the source, but in no sentence that also gives the point's label (its year, its name).
    LABEL_NOT_WITH_VALUE = "label_not_with_value"


class ChartSpecError(ValueError):
    """A chart block that cannot be drawn as written; the message says what to fix."""


class ChartPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # An int stays an int (a year reads 2021, not 2021.0).
    x: str | int | float
    y: float
    # None only on delivery, when the source the point cited was removed as never retrieved.
    cite: int | None


class ChartSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ChartKind
    title: str
    x_label: str = ""
    y_label: str = ""
    unit: str = ""
    points: tuple[ChartPoint, ...]

    @property
    def digest(self) -> str:
        """A short digest of the spec: the chart's address, the same for the same chart."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return "chart-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    @property
    def cites(self) -> list[int]:
        return list(dict.fromkeys(p.cite for p in self.points if p.cite is not None))


class PointCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: PointVerdict
    reason: str = ""
    # For a point that does not check out: what the cited source says about its label, or where its value is.
    sentence: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict == PointVerdict.SUPPORTED


class ChartRecord(BaseModel):
    """A delivered chart: its spec, one check per point, whether it is drawn, and what the caption says."""

    model_config = ConfigDict(frozen=True)

    id: str
    spec: ChartSpec
    checks: tuple[PointCheck, ...]
    drawn: bool
    caption: str
    # Why a chart is not drawn; empty when it is.
    reason: str = ""

    @property
    def failing(self) -> list[int]:
        """The positions of the points that do not check out, in order."""
        return [i for i, check in enumerate(self.checks) if not check.ok]

    def to_block(self) -> str:
        """The block as it stands in a delivered report: the spec with the checks written into it."""
        spec = self.spec.model_dump(mode="json")
        spec["points"] = [
            {**point, "check": check.model_dump(mode="json", exclude_defaults=True)}
            for point, check in zip(spec["points"], self.checks, strict=True)
        ]
        body = {"id": self.id, **spec, "drawn": self.drawn, "caption": self.caption}
        if self.reason:
            body["reason"] = self.reason
        # One field, and one point, per line: readable in the raw report, and a diff shows which point changed.
        fields = [
            f" {json.dumps(key)}: [\n" + ",\n".join(f"  {_dumps(point)}" for point in value) + "\n ]"
            if key == "points"
            else f" {json.dumps(key)}: {_dumps(value)}"
            for key, value in body.items()
        ]
        return f"```{CHART_LANGUAGE}\n{{\n" + ",\n".join(fields) + "\n}\n```"

    @classmethod
    def from_block(cls, text: str) -> ChartRecord | None:
        """The record a delivered block holds; None for a block the product did not write (no checks)."""
        try:
            raw = json.loads(text)
        except ValueError:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("points"), list) or "id" not in raw:
            return None
        try:
            points = [dict(p) for p in raw["points"]]
            checks = [PointCheck.model_validate(p.pop("check")) for p in points]
            spec = ChartSpec.model_validate({**{k: raw[k] for k in _SPEC_FIELDS if k in raw}, "points": points})
            return cls(
                id=str(raw["id"]),
                spec=spec,
                checks=tuple(checks),
                drawn=bool(raw.get("drawn")),
                caption=str(raw.get("caption") or ""),
                reason=str(raw.get("reason") or ""),
            )
        except (KeyError, TypeError, ValueError, ValidationError):
            return None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def parse_chart(text: str, *, max_points: int = MAX_POINTS) -> ChartSpec:
    """The spec of one chart block's text, or ``ChartSpecError`` saying what to fix."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChartSpecError(f"its text is not one JSON object ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise ChartSpecError('it must hold one JSON object, {"kind": ..., "points": [...]}')
    raw = {k: v for k, v in raw.items() if k not in _PRODUCT_FIELDS}
    columns = [k for k in ("x", "y", "cite", "labels", "values") if isinstance(raw.get(k), list)]
    if columns:
        lengths = ", ".join(f"{k} has {len(raw[k])}" for k in columns)
        raise ChartSpecError(
            f'it gives columns ({lengths}) instead of points: write "points": [{{"x": ..., "y": ..., '
            '"cite": n}, ...], one object per point, so every value has its label and its source'
        )
    unknown = sorted(set(raw) - set(_SPEC_FIELDS))
    if unknown:
        raise ChartSpecError(f"unknown field {', '.join(map(repr, unknown))}: use only {', '.join(_SPEC_FIELDS)}")
    kind = raw.get("kind")
    if kind not in {k.value for k in ChartKind}:
        raise ChartSpecError(f"kind {kind!r} is not one of {', '.join(k.value for k in ChartKind)}")
    title = _text(raw, "title", MAX_TITLE_CHARS, required=True)
    labels = {name: _text(raw, name, MAX_LABEL_CHARS) for name in ("x_label", "y_label", "unit")}
    points = raw.get("points")
    if not isinstance(points, list) or not points:
        raise ChartSpecError('points must be a non-empty list of {"x": ..., "y": number, "cite": n} objects')
    if len(points) > max_points:
        raise ChartSpecError(
            f"it has {len(points):,} points; a chart takes at most {max_points}: chart a summary (yearly values, "
            "the main categories) and state the rest in words"
        )
    parsed = [_point(point, position) for position, point in enumerate(points, start=1)]
    _consistent(ChartKind(kind), parsed)
    return ChartSpec(kind=ChartKind(kind), title=title, points=tuple(parsed), **labels)


def _text(raw: dict[str, Any], name: str, limit: int, *, required: bool = False) -> str:
    value = raw.get(name, "")
    if not isinstance(value, str):
        raise ChartSpecError(f"{name} must be a string")
    if required and not value.strip():
        raise ChartSpecError(f"{name} is missing: give the chart a plain-text {name}")
    if _MARKUP_RE.search(value):
        raise ChartSpecError(f"{name} {value[:80]!r} carries markup: write it as plain text, without Markdown or HTML")
    if len(value) > limit:
        raise ChartSpecError(f"{name} is {len(value)} characters long; keep it under {limit}")
    return value.strip()


def _point(raw: Any, position: int) -> ChartPoint:
    where = f"point {position}"
    if not isinstance(raw, dict):
        raise ChartSpecError(f'{where} is not an object: write {{"x": ..., "y": number, "cite": n}}')
    raw = {k: v for k, v in raw.items() if k not in _PRODUCT_POINT_FIELDS}
    unknown = sorted(set(raw) - set(_POINT_FIELDS))
    if unknown:
        raise ChartSpecError(f"{where} has unknown field {', '.join(map(repr, unknown))}: use only x, y and cite")
    missing = [k for k in _POINT_FIELDS if k not in raw]
    if missing:
        raise ChartSpecError(f'{where} lacks {", ".join(missing)}: every point is {{"x": ..., "y": number, "cite": n}}')
    x, y, cite = raw["x"], raw["y"], raw["cite"]
    if not _number(y):
        raise ChartSpecError(
            f'{where}: y {y!r} is not a number: write the value as a JSON number (42.5, not "42.5" or "42.5%"); '
            'the unit goes in "unit"'
        )
    if isinstance(x, str):
        if not x.strip() or _MARKUP_RE.search(x) or len(x) > MAX_LABEL_CHARS:
            raise ChartSpecError(f"{where}: x {x[:80]!r} must be a short plain-text label or a number")
        x = x.strip()
    elif not _number(x):
        raise ChartSpecError(f"{where}: x {x!r} must be a label (a string) or a number")
    # null only where the delivery removed a source never retrieved: the point then rests on nothing.
    if cite is not None and (isinstance(cite, bool) or not isinstance(cite, int) or cite < 1):
        raise ChartSpecError(f"{where}: cite {cite!r} must be the number n of the source [n] that gives the value")
    return ChartPoint(x=int(x) if isinstance(x, float) and x.is_integer() else x, y=float(y), cite=cite)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _consistent(kind: ChartKind, points: list[ChartPoint]) -> None:
    numeric = [not isinstance(p.x, str) for p in points]
    if any(numeric) and not all(numeric):
        raise ChartSpecError("x mixes numbers and labels: make every x a number, or every x a label")
    if kind == ChartKind.SCATTER and not all(numeric):
        raise ChartSpecError("a scatter chart needs a number as every x; use a bar chart for labels")
    if kind != ChartKind.SCATTER:
        seen: set[str] = set()
        for point in points:
            key = format_x(point.x)
            if key in seen:
                raise ChartSpecError(f"x {key} appears twice: a {kind.value} chart has one value per x")
            seen.add(key)


def format_x(x: str | int | float) -> str:
    """An x as a reader sees it: ``2021``, not ``2021.0``."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def format_y(y: float) -> str:
    """A value as a reader sees it: ``41.2``, ``1,240``, never ``1240.0``."""
    if y.is_integer():
        return f"{int(y):,}"
    return f"{y:,.6f}".rstrip("0").rstrip(".")
