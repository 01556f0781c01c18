"""The report renderers on a scripted ``ReportDocument``: what each format shows and where its links go."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import docx
import pytest
from pypdf import PdfReader

from deep_research_agent.domain.claims import ClaimRecord, ClaimSummary
from deep_research_agent.domain.names import ClaimVerdict, Outcome
from deep_research_agent.export import (
    DocumentSource,
    ExportFormat,
    NoReport,
    ReportDocument,
    file_name,
    render,
    report_document,
)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MARKED = "Sales rose 40% in 2024 [2] [unverified]."


def scripted() -> ReportDocument:
    return ReportDocument(
        title="Électricité 电力",
        question="Wie viel Strom? 电力多少？",
        date=datetime(2026, 5, 4, 9, 30, tzinfo=UTC),
        outcome=Outcome.PARTIAL,
        body=(
            f"Prices fell [1]. {MARKED}\n\n| Year | Value |\n|---|---|\n| 2024 | 12 [1, 2] |\n\n"
            "`[1]` stays code. <script>alert(1)</script>\n\nשלום עולם\n"
        ),
        sources=[
            DocumentSource(index=1, title="Grid data", url="https://example.org/grid", read_at=datetime(2026, 5, 4, 9)),
            DocumentSource(
                index=2, title="Sales", url="https://example.org/sales", authors=["A. Li"], year=2025, doi="10.1/x"
            ),
        ],
        claims=[
            ClaimRecord(claim="Prices fell [1].", indexes=[1], verdict=ClaimVerdict.SUPPORTED),
            ClaimRecord(
                claim=MARKED, indexes=[2], verdict=ClaimVerdict.UNSUPPORTED_NUMBER, detail="40% not in the text of [2]"
            ),
        ],
        summary=ClaimSummary(claims=2, supported=1, flagged=1, unsupported_number=1, citation_accuracy=0.5),
    )


def test_the_html_page_links_each_marker_to_its_source_notes_the_mark_and_escapes_the_report():
    page = render(scripted(), ExportFormat.HTML).decode()

    assert '<h1 dir="auto">Électricité 电力</h1>' in page and "Wie viel Strom? 电力多少？" in page
    assert "2026-05-04 09:30 UTC" in page and "(marked [unverified])" in page
    assert page.count('href="https://example.org/grid"') == 3 and page.count('href="https://example.org/sales"') == 3
    assert '<mark class="unverified">[unverified]</mark>' in page and 'href="#note-1"' in page
    assert '<li id="note-1" dir="auto">1. <q>Sales rose 40% in 2024 [2].</q>' in page
    assert "40% not in the text of [2]" in page
    assert "<code>[1]</code>" in page and "&lt;script&gt;" in page and "<script>" not in page
    assert "A. Li; 2025; doi:10.1/x; not read in full" in page and "read 2026-05-04 09:00 UTC" in page
    assert "<td>50% (supported claims ÷ claims)</td>" in page and "<table>" in page


def test_the_pdf_holds_the_text_in_every_script_and_links_the_sources():
    pdf = PdfReader(io.BytesIO(render(scripted(), ExportFormat.PDF)))

    text = "\n".join(page.extract_text() for page in pdf.pages)
    assert "电力" in text and "Électricité" in text and "[unverified]" in text
    uris = [a.get_object()["/A"]["/URI"] for p in pdf.pages for a in p.get("/Annots") or [] if "/A" in a.get_object()]
    assert uris.count("https://example.org/grid") == 3


def test_the_word_file_links_markers_to_numbered_entries_and_notes():
    document = docx.Document(io.BytesIO(render(scripted(), ExportFormat.DOCX)))

    paragraphs = document.paragraphs
    assert paragraphs[0].style.name == "Title" and paragraphs[0].text == "Électricité 电力"
    fragments = [h.fragment for p in paragraphs for h in p.hyperlinks if h.fragment]
    assert fragments == ["source_1", "source_2", "note_1"]
    marks = {b.get(W + "name"): p.text for p in paragraphs for b in p._p.iter(W + "bookmarkStart")}
    assert marks["note_1"].startswith("1. “Sales rose 40% in 2024 [2].”") and "40% not in the text" in marks["note_1"]
    assert marks["source_2"].startswith("[2] Sales — https://example.org/sales (A. Li; 2025; doi:10.1/x")
    assert any(run.font.rtl for p in paragraphs for run in p.runs if "שלום" in run.text)
    cells = [cell.text for table in document.tables for cell in table._cells]
    assert "12 [1, 2]" in cells and "Citation accuracy" in cells


def test_the_markdown_keeps_the_report_and_appends_notes_sources_and_checks():
    text = render(scripted(), ExportFormat.MD).decode()

    assert text.startswith("# Électricité 电力\n\n**Question:** Wie viel Strom?")
    assert MARKED in text and "1. “Sales rose 40% in 2024 [2].”: A figure of it is" in text
    assert "[1] [Grid data](<https://example.org/grid>) (read 2026-05-04 09:00 UTC)" in text
    assert "| Citation accuracy | 50% (supported claims ÷ claims) |" in text


def test_the_document_is_built_from_the_state_records_not_the_sources_text():
    values = {
        "final_report": "# Title\n\nA [1].\n\n## Sources\n[1] Wrong title — https://a.example\n",
        "cited_sources": [{"index": 1, "url": "https://a.example", "title": "Right title", "evidence_id": "ev1"}],
        "evidence": [{"id": "ev1", "retrieved_at": "2026-05-04T09:00:00+00:00"}],
        "sources": [{"index": 1, "url": "https://a.example", "title": "Right title", "year": 2020}],
        "messages": [
            {"type": "human", "content": "The question?"},
            {"type": "human", "content": "Answers to your clarifying questions:\n1. Q: a A: b"},
            {"type": "human", "content": "nudge", "name": "dra_harness"},
        ],
        "outcome": "answered",
    }

    document = report_document(values, created_at="2026-05-04T10:00:00+00:00")

    assert (document.title, document.question, document.body) == ("Title", "The question?", "A [1].\n")
    [source] = document.sources
    assert (source.title, source.year, source.read_at) == ("Right title", 2020, datetime(2026, 5, 4, 9, tzinfo=UTC))
    assert document.outcome_notice == "" and file_name(document, ExportFormat.PDF) == "the-question.pdf"
    with pytest.raises(NoReport):
        report_document({"messages": []})


@pytest.mark.parametrize(
    ("path", "expected"), [("r.PDF", ExportFormat.PDF), ("a/b.docx", ExportFormat.DOCX), ("x.htm", ExportFormat.HTML)]
)
def test_the_format_comes_from_the_extension(path, expected):
    assert ExportFormat.of_path(path) == expected


def test_an_unknown_extension_names_the_formats_there_are():
    with pytest.raises(ValueError, match=r"report\.odt.*\.md, \.html, \.pdf, \.docx"):
        ExportFormat.of_path("report.odt")
