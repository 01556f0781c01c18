"""A report document as Markdown: the header, the report as written, the notes on its ``[unverified]`` marks,
the Sources list rebuilt from the state's records (with when each was read) and the checks appendix; every
image syntax anywhere in it made a link and raw HTML text (``images.inert_markdown``), so no viewer loads what a
report names."""

from __future__ import annotations

from .document import ReportDocument
from .images import inert_markdown
from .markup import unverified_marks
from .wording import appendix_rows, header_lines, note_text, source_details


def render_markdown(document: ReportDocument) -> str:
    parts = [f"# {document.title}", ""]
    parts += [f"**{label}:** {text}  " for label, text in header_lines(document)]
    parts += ["", document.body.strip(), ""]
    flagged = document.flagged_claims
    marks = unverified_marks(document.body)
    if marks:
        parts += ["## Notes on unverified claims", ""]
        for note in range(1, marks + 1):
            claim, why = note_text(flagged[note - 1] if note <= len(flagged) else None)
            parts.append(f"{note}. {f'“{claim}”: ' if claim else ''}{why}")
        parts.append("")
    if document.sources:
        parts += ["## Sources", ""]
        for source in document.sources:
            label = source.label.replace("[", "\\[").replace("]", "\\]")
            title = f"[{label}](<{source.url}>)" if source.url else label
            parts.append(f"[{source.index}] {title} ({'; '.join(source_details(source))})  ")
        parts.append("")
    parts += ["## Appendix: checks", "", "| Check | Result |", "|---|---|"]
    parts += [f"| {label.strip()} | {value} |" for label, value in appendix_rows(document.summary, len(flagged))]
    return inert_markdown("\n".join(parts) + "\n")
