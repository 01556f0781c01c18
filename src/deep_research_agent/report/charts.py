"""Charts in a report, checked like its sentences: every point's value against the text of the source it cites.

Contract:
- ``chart_blocks(markdown)``: the report's ```` ```chart ```` blocks outside its Sources section, in order;
- ``check_charts(markdown, citations, library, max_charts=...)`` parses each block (``domain/charts.py``) and
  checks each point: its source ``[cite]`` must have been read in full, its value ``y`` in its ``unit`` must be
  in that text by the figure rules sentences are held to (``evidence/figures.py``: written forms, units,
  scale words, ranges), and a sentence holding the value, or the sentence before it, must give the point's
  label ``x`` (its year, its name), so a value is not taken from another year's row. A chart whose points
  mostly fail (more than half) is not drawn. ``ChartCheck.problems()`` says what to fix for the report
  gate's one bounce: specs that cannot be drawn, more charts than ``max_charts``, points citing no Sources
  entry, and points that do not check out;
- ``with_checked_charts(markdown, check)`` is the delivered text: each chart block rewritten with its checks
  (``ChartRecord.to_block``), and a block that cannot be drawn (or one past ``max_charts``) replaced by a note
  saying why, so the report says what it left out;
- ``chart_cites`` and ``renumber_chart_cites`` let the citation lint and repair count and renumber the
  sources charts cite (a chart's ``cite`` lives in code, which the citation anatomy does not read);
- ``chart_markdown(record, image_url)`` is a delivered chart as any Markdown renderer shows it: the image
  link, the caption, the notes on failing points and the data table; ``charts_as_markdown`` does it for every
  block of a report (the turn's last AI message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..domain.charts import (
    CHART_LANGUAGE,
    DEFAULT_MAX_CHARTS,
    ChartRecord,
    ChartSpec,
    ChartSpecError,
    PointCheck,
    PointVerdict,
    format_x,
    format_y,
    parse_chart,
)
from ..domain.claims import CitationRecord
from ..evidence.figures import COUNT, DATE, Figure, figures_in, supports
from ..evidence.text import EvidenceLibrary, EvidenceText, Span, content_words
from .markdown import split_sources

if TYPE_CHECKING:  # the citation check renumbers charts' cites with this module
    from .citations import CitationReport

_FENCE_RE = re.compile(
    rf"^(?P<indent>[ \t]{{0,3}})(?P<fence>`{{3,}}|~{{3,}})[ \t]*{CHART_LANGUAGE}[ \t]*\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$\n?",
    re.MULTILINE | re.DOTALL | re.IGNORECASE,
)
_CURRENCY_SIGNS = ("US$", "$", "€", "£", "¥")
_HITS = 8
_STEM = 5
NOT_DRAWN_LEAD = "Chart not drawn"
NOT_SHOWN_LEAD = "Chart not shown"


@dataclass(frozen=True)
class ChartBlock:
    start: int
    end: int
    body: str


@dataclass(frozen=True)
class CheckedBlock:
    block: ChartBlock
    record: ChartRecord | None = None
    error: str = ""


@dataclass(frozen=True)
class ChartCheck:
    blocks: list[CheckedBlock] = field(default_factory=list)
    max_charts: int = DEFAULT_MAX_CHARTS

    @property
    def records(self) -> list[ChartRecord]:
        return [b.record for b in self.blocks if b.record is not None]

    def problems(self) -> list[str]:
        """Each chart problem as an instruction to the report's writer."""
        problems: list[str] = []
        for number, checked in enumerate(self.blocks, start=1):
            if checked.error:
                problems.append(f"Chart {number} cannot be drawn: {checked.error}.")
                continue
            record = checked.record
            assert record is not None
            for position in record.failing:
                point, check = record.spec.points[position], record.checks[position]
                problems.append(
                    f"Chart “{record.spec.title}”, point {format_x(point.x)} ({_value(record.spec, point.y)}, "
                    f"cites [{point.cite}]): {check.reason}.{_says(point.cite, check)} Chart the value the source "
                    "gives for that label, or drop the point."
                )
        return problems


def chart_blocks(markdown: str) -> list[ChartBlock]:
    """The chart blocks of ``markdown`` outside its Sources section, in order."""
    parts = split_sources(markdown)
    found: list[ChartBlock] = []
    for offset, text in ((0, parts.before), (len(parts.before) + len(parts.sources), parts.after)):
        for match in _FENCE_RE.finditer(text):
            found.append(ChartBlock(offset + match.start(), offset + match.end(), match.group("body")))
    return found


def is_chart_fence(info: str) -> bool:
    """Whether a fenced block's info string makes it a chart."""
    return info.strip().lower() == CHART_LANGUAGE


def chart_cites(markdown: str) -> list[int]:
    """The source numbers the report's parseable charts cite, in order of first use."""
    cites: list[int] = []
    for block in chart_blocks(markdown):
        spec = _spec_or_none(block.body)
        if spec is not None:
            cites += spec.cites
    return list(dict.fromkeys(cites))


def renumber_chart_cites(markdown: str, numbering: dict[int, int]) -> str:
    """``markdown`` with each chart's ``cite`` renumbered; a cite with no new number becomes null (its source was
    removed as never retrieved, so the point shows as resting on nothing)."""
    pieces: list[str] = []
    position = 0
    for block in chart_blocks(markdown):
        spec = _spec_or_none(block.body)
        if spec is None or all(numbering.get(n) == n for n in spec.cites):
            continue  # kept as written: an unchanged report is not checked again on delivery
        points = tuple(
            p.model_copy(update={"cite": numbering.get(p.cite) if p.cite is not None else None}) for p in spec.points
        )
        renumbered = spec.model_copy(update={"points": points})
        pieces.append(markdown[position : block.start] + _spec_block(renumbered))
        position = block.end
    pieces.append(markdown[position:])
    return "".join(pieces)


def check_charts(markdown: str, citations: CitationReport, library: EvidenceLibrary, *, max_charts: int) -> ChartCheck:
    """Every chart block of ``markdown`` parsed and its points checked (see the module's contract)."""
    by_index = {c.index: c for c in citations.citations}
    checked: list[CheckedBlock] = []
    for number, block in enumerate(chart_blocks(markdown), start=1):
        if number > max_charts:
            error = (
                f"a report holds at most {max_charts} chart{'' if max_charts == 1 else 's'}: keep the ones that "
                "matter most"
                if max_charts
                else "charts are off on this server: give the values in a table instead"
            )
            checked.append(CheckedBlock(block, error=error))
            continue
        try:
            spec = parse_chart(block.body)
        except ChartSpecError as exc:
            checked.append(CheckedBlock(block, error=str(exc)))
            continue
        checked.append(CheckedBlock(block, record=check_chart(spec, by_index, library)))
    return ChartCheck(checked, max_charts)


def check_chart(spec: ChartSpec, by_index: dict[int, CitationRecord], library: EvidenceLibrary) -> ChartRecord:
    checks = tuple(_check_point(spec, point.x, point.y, point.cite, by_index, library) for point in spec.points)
    failing = sum(not c.ok for c in checks)
    drawn = failing * 2 <= len(checks)
    reason = "" if drawn else f"{failing} of its {len(checks)} points do not check out against the sources they cite"
    return ChartRecord(
        id=spec.digest, spec=spec, checks=checks, drawn=drawn, caption=_caption(len(checks), failing), reason=reason
    )


def with_checked_charts(markdown: str, check: ChartCheck) -> str:
    """The delivered text: checked blocks rewritten with their checks, the others replaced by a note."""
    pieces: list[str] = []
    position = 0
    for checked in check.blocks:
        block = checked.block
        if checked.record is not None:
            replacement = checked.record.to_block() + "\n"
        else:
            title = _title_of(block.body)
            replacement = f"> {NOT_SHOWN_LEAD}{f' (“{title}”)' if title else ''}: {checked.error}.\n"
        pieces.append(markdown[position : block.start] + replacement)
        position = block.end
    pieces.append(markdown[position:])
    return "".join(pieces)


# --- reading a delivered chart ---------------------------------------------------------------------------


def delivered_charts(markdown: str) -> list[ChartRecord]:
    """The checked charts of a delivered report, in order."""
    return [record for block in chart_blocks(markdown) if (record := ChartRecord.from_block(block.body))]


def charts_as_markdown(markdown: str, image_url: Callable[[ChartRecord], str | None], *, table: bool = True) -> str:
    """``markdown`` with every delivered chart block shown as ``chart_markdown`` (the image from ``image_url``;
    without ``table``, the data table is left to an appendix)."""
    pieces: list[str] = []
    position = 0
    for block in chart_blocks(markdown):
        record = ChartRecord.from_block(block.body)
        if record is None:
            continue
        pieces.append(markdown[position : block.start] + chart_markdown(record, image_url(record), table=table) + "\n")
        position = block.end
    pieces.append(markdown[position:])
    return "".join(pieces)


def chart_markdown(record: ChartRecord, image_url: str | None, *, table: bool = True) -> str:
    """A delivered chart in Markdown: its image (when drawn and addressable), caption, notes and data table."""
    spec = record.spec
    lines: list[str] = []
    if record.drawn and image_url:
        lines += [f"![{alt_text(record)}]({image_url})", ""]
    lines.append(f"**Chart: {spec.title}.** {caption_text(record)}")
    notes = point_notes(record)
    if notes:
        lines += [""] + [f"{note}  " for note in notes]
    if table:
        lines += ["", *data_table(record)]
    return "\n".join(lines) + "\n"


def caption_text(record: ChartRecord) -> str:
    """The caption: what was checked, and why a chart is not drawn."""
    if record.drawn:
        return record.caption
    return f"{NOT_DRAWN_LEAD}: {record.reason}. {record.caption}"


def alt_text(record: ChartRecord) -> str:
    """The image's alternative text: the kind, title, axes and the span of its values."""
    spec = record.spec
    values = [p.y for p in spec.points]
    axes = " against ".join(part for part in (spec.y_label, spec.x_label) if part)
    span = (
        f"{len(values)} points, from {format_x(spec.points[0].x)} ({_value(spec, values[0])}) "
        f"to {format_x(spec.points[-1].x)} ({_value(spec, values[-1])})"
    )
    return " ".join(f"{spec.kind.value.capitalize()} chart: {spec.title}{f', {axes}' if axes else ''}; {span}.".split())


def point_notes(record: ChartRecord) -> list[str]:
    """One note per failing point: ``¹ 2023: 63 GWh [2] — reason``, numbered as the image marks them."""
    notes = []
    for number, position in enumerate(record.failing, start=1):
        point, check = record.spec.points[position], record.checks[position]
        cite = f" [{point.cite}]" if point.cite is not None else ""
        # A dash, not a colon, after the marker: "[2]:" would read as a link definition, never linked.
        notes.append(
            f"{superscript(number)} {format_x(point.x)}: {_value(record.spec, point.y)}{cite} — {check.reason}."
            + _says(point.cite, check)
        )
    return notes


def data_table(record: ChartRecord) -> list[str]:
    """The chart's data as a Markdown table: label, value, source, check."""
    spec = record.spec
    value_header = (spec.y_label or "Value") + (f" ({spec.unit})" if spec.unit else "")
    rows = [f"| {_cell(spec.x_label or 'Label')} | {_cell(value_header)} | Source | Check |", "|---|---:|---|---|"]
    numbers = {position: n for n, position in enumerate(record.failing, start=1)}
    for position, (point, check) in enumerate(zip(spec.points, record.checks, strict=True)):
        cite = f"[{point.cite}]" if point.cite is not None else "none"
        verdict = "checked" if check.ok else f"does not check out {superscript(numbers[position])}"
        rows.append(f"| {_cell(format_x(point.x))} | {format_y(point.y)} | {cite} | {verdict} |")
    return rows


def superscript(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


# --- checking one point ------------------------------------------------------------------------------


def _check_point(
    spec: ChartSpec,
    x: str | int | float,
    y: float,
    cite: int | None,
    by_index: dict[int, CitationRecord],
    library: EvidenceLibrary,
) -> PointCheck:
    citation = by_index.get(cite) if cite is not None else None
    if citation is None or citation.action == "remove":
        why = "its source was never retrieved by this run" if cite is None or citation else f"[{cite}] is not listed"
        return PointCheck(verdict=PointVerdict.SOURCE_NOT_READ, reason=why)
    texts = library.for_source(citation.url or citation.title)
    read = [t for t in texts if t.read]
    if not read:
        why = (
            f"[{cite}] was only seen as a search-result snippet; its page was never read"
            if texts
            else f"[{cite}] was never retrieved by this run"
        )
        return PointCheck(verdict=PointVerdict.SOURCE_NOT_READ, reason=why)
    value = _figure(y, spec.unit)
    hits = [(text, span) for text in read for span, _ in text.find(value, limit=_HITS)]
    if not hits:
        nearest = _nearest(read, x, spec)
        return PointCheck(
            verdict=PointVerdict.UNSUPPORTED_VALUE,
            reason=f"{_value(spec, y)} is not in the text of [{cite}]",
            sentence=nearest,
        )
    for text, span in hits:
        if _labels(text, span, x):
            # No sentence kept: the report carries every point's check, and a chart may have 200 points.
            return PointCheck(verdict=PointVerdict.SUPPORTED)
    text, span = hits[0]
    return PointCheck(
        verdict=PointVerdict.LABEL_NOT_WITH_VALUE,
        reason=f"[{cite}] gives {_value(spec, y)}, but in no sentence about {format_x(x)}",
        sentence=text.sentence(span),
    )


def _figure(y: float, unit: str) -> Figure:
    """The point's value as a figure a sentence would state: ``41.2 GWh``, ``$61``, ``12%``, ``1.2 billion``."""
    number = format_y(y).replace(",", "").lstrip("-")
    unit = unit.strip()
    sign = next((s for s in _CURRENCY_SIGNS if unit.startswith(s)), "")
    written = f"{sign}{number} {unit[len(sign) :].strip()}".strip() if sign else f"{number} {unit}".strip()
    for figure in figures_in(written):
        if figure.start == 0:
            # A chart's value measures; it is never a year, even when it has four digits.
            return figure._replace(kind=COUNT) if not figure.kind else figure
    return Figure(number, "", COUNT, "", number, 0, len(number))


def _labels(text: EvidenceText, span: Span, x: str | int | float) -> bool:
    """Whether the sentence ``span`` of ``text``, or the one before it, gives the label ``x``."""
    spans = [span]
    if span[0] > 1:
        spans.append(text.sentence_span(span[0] - 2))
    label = format_x(x)
    wanted_figures = figures_in(label)
    wanted_words = {word[:_STEM] for word in content_words(label)}
    for candidate in spans:
        found = text.figures(candidate)
        if not all(any(supports(w._replace(kind=""), f) for f in found) for w in wanted_figures):
            continue
        if wanted_words - {word[:_STEM] for word in text.words(candidate)}:
            continue
        if wanted_figures or wanted_words:
            return True
    return False


def _nearest(texts: Sequence[EvidenceText], x: str | int | float, spec: ChartSpec) -> str:
    """The cited text's sentence about the point: the first that gives its label and a value in the chart's unit
    (what the source says instead), or nothing."""
    unit = _figure(1.0, spec.unit).unit
    for figure in figures_in(format_x(x))[:1]:
        for text in texts:
            for span, found in text.find(figure._replace(kind=""), limit=_HITS):
                figures = text.figures(span)
                if text.is_header(span) or any(f.kind == DATE and f.start <= found.start < f.end for f in figures):
                    continue  # a byline's "2024-01-30" is no sentence about 2024
                if any(f.start != found.start and (f.unit == unit or not unit) for f in figures):
                    return text.sentence(span)
    return ""


# --- small helpers -----------------------------------------------------------------------------------


def _caption(points: int, failing: int) -> str:
    checked = "in the text of the source it cites, in a sentence that gives its label (or the one before)"
    if not failing:
        return f"Checked: each of the {points} values is {checked}."
    return (
        f"Checked: {points - failing} of {points} values are each {checked}; {failing} "
        f"{'is' if failing == 1 else 'are'} not (drawn hollow and numbered, the reason below)."
    )


def _value(spec: ChartSpec, y: float) -> str:
    unit = spec.unit.strip()
    if not unit:
        return format_y(y)
    if unit in ("%",):
        return f"{format_y(y)}%"
    sign = next((s for s in _CURRENCY_SIGNS if unit == s), "")
    return f"{sign}{format_y(y)}" if sign else f"{format_y(y)} {unit}"


def _says(cite: int | None, check: PointCheck) -> str:
    return f" [{cite}] says: “{check.sentence}”" if check.sentence and cite is not None else ""


def _cell(text: str) -> str:
    return text.replace("|", "/")


def _spec_or_none(body: str) -> ChartSpec | None:
    try:
        return parse_chart(body)
    except ChartSpecError:
        return None


def _spec_block(spec: ChartSpec) -> str:
    return f"```{CHART_LANGUAGE}\n{json.dumps(spec.model_dump(mode='json'), ensure_ascii=False, indent=1)}\n```\n"


def _title_of(body: str) -> str:
    match = re.search(r'"title"\s*:\s*"([^"\n]{1,120})"', body)
    return " ".join(match.group(1).split()) if match else ""
