"""The report renderers on a scripted ``ReportDocument``: what each format shows and where its links go."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import docx
import pytest
from pypdf import PdfReader

from deep_research_agent.domain.claims import ClaimRecord, summarise_claims
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


CLAIMS = [
    ClaimRecord(claim="Prices fell [1].", indexes=[1], verdict=ClaimVerdict.SUPPORTED),
    ClaimRecord(
        claim=MARKED, indexes=[2], verdict=ClaimVerdict.UNSUPPORTED_NUMBER, detail="40% not in the text of [2]"
    ),
]
COVERAGE = "2 of 2 claims checked; 1 supported, 1 marked [unverified] (citation accuracy 50%)"


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
        claims=CLAIMS,
        summary=summarise_claims(CLAIMS),
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
    assert f"<th>Coverage</th><td>{COVERAGE}</td>" in page and "<table>" in page


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
    assert "12 [1, 2]" in cells and COVERAGE in cells


def test_the_markdown_keeps_the_report_and_appends_notes_sources_and_checks():
    text = render(scripted(), ExportFormat.MD).decode()

    assert text.startswith("# Électricité 电力\n\n**Question:** Wie viel Strom?")
    assert MARKED in text and "1. “Sales rose 40% in 2024 [2].”: A figure of it is" in text
    assert "[1] [Grid data](<https://example.org/grid>) (read 2026-05-04 09:00 UTC)" in text
    assert f"| Coverage | {COVERAGE} |" in text


def unchecked_report() -> ReportDocument:
    body = "The evidence found answers the question [1]. Finding 1 is supported by its source [1]."
    claims = [
        ClaimRecord(claim=sentence, indexes=[1], verdict=ClaimVerdict.UNCHECKED, decided_by="not_checked")
        for sentence in ("The evidence found answers the question [1].", "Finding 1 is supported by its source [1].")
    ]
    source = DocumentSource(index=1, title="Grid data", url="https://example.org/grid")
    return ReportDocument(title="T", body=body, sources=[source], claims=claims, summary=summarise_claims(claims))


@pytest.mark.parametrize("form", [ExportFormat.MD, ExportFormat.HTML, ExportFormat.PDF, ExportFormat.DOCX])
def test_a_report_whose_claims_nothing_checked_says_so_and_no_format_says_100_percent(form: ExportFormat):
    data = render(unchecked_report(), form)
    if form == ExportFormat.PDF:
        text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    elif form == ExportFormat.DOCX:
        document = docx.Document(io.BytesIO(data))
        text = "\n".join([p.text for p in document.paragraphs] + [c.text for t in document.tables for c in t._cells])
    else:
        # What a reader sees: the stylesheet's widths ("max-width: 100%") are no figure.
        text = re.sub(r"<style>.*?</style>", "", data.decode(), flags=re.S)
    assert "0 of 2 claims checked" in " ".join(text.split()) and "100%" not in text
    assert text.count("[unverified]") == 1, "only the appendix's count: nothing found an unchecked claim wrong"


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


# --- images: never loaded, shown as links --------------------------------------------------------------


def with_images(image_url: str) -> ReportDocument:
    return ReportDocument(
        title="Charts",
        body=(
            f"A chart: ![price chart]({image_url}) and ![](https://cdn.example/pixel.png).\n\n"
            "![local](chart.png) and ![secret](file:///etc/passwd). Amazing![1]\n\n"
            "`![code](http://127.0.0.1:1/x.png)` stays code.\n"
        ),
        sources=[DocumentSource(index=1, title="Grid data", url="https://example.org/grid")],
    )


def loadable(markdown: str) -> list[str]:
    """Every image (whatever its address) and raw HTML element a CommonMark viewer would render from ``markdown``."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    parser.validateLink = lambda url: True
    blocks = parser.parse(markdown)
    return [b.content for b in blocks if b.type == "html_block"] + [
        c.attrGet("src") or c.content for b in blocks for c in b.children or [] if c.type in ("image", "html_inline")
    ]


def test_the_pdf_of_a_report_naming_a_loopback_image_requests_nothing_and_links_the_image(web):
    image = web.url("/image.png")

    pdf = PdfReader(io.BytesIO(render(with_images(image), ExportFormat.PDF)))

    assert web.page_requests() == [], "the PDF engine fetched what the report names"
    text = " ".join(" ".join(page.extract_text() for page in pdf.pages).split())
    assert "Image: price chart" in text and "Image not shown: local" in text
    uris = [a.get_object()["/A"]["/URI"] for p in pdf.pages for a in p.get("/Annots") or [] if "/A" in a.get_object()]
    assert image in uris and "https://cdn.example/pixel.png" in uris


def test_the_pdf_engine_loads_only_data_urls_whatever_the_page_names(web):
    from weasyprint import HTML

    from deep_research_agent.export.images import embedded_only_fetcher

    pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
    page = (
        f'<img src="{web.url("/image.png")}"><img src="file:///etc/hostname">'
        f'<div style="background: url({web.url("/short")})">x</div><img src="{pixel}">'
    )

    pdf = HTML(string=page, url_fetcher=embedded_only_fetcher()).write_pdf()

    assert pdf and web.page_requests() == []
    assert len(PdfReader(io.BytesIO(pdf)).pages[0].images) == 1, "the data: image the product embeds is drawn"


def test_the_html_page_shows_images_as_links_and_notes_and_loads_none():
    page = render(with_images("http://127.0.0.1:9/p.png"), ExportFormat.HTML).decode()

    assert "<img" not in page
    assert '<a href="http://127.0.0.1:9/p.png">Image: price chart</a>' in page
    assert '<a href="https://cdn.example/pixel.png">Image</a>' in page
    assert "Image not shown: local" in page and "chart.png" not in page
    assert "![secret](file:///etc/passwd)" in page, "markdown-it never takes a file: address for an image"
    assert "<code>![code](http://127.0.0.1:1/x.png)</code>" in page


def test_the_word_file_links_images_and_embeds_none():
    document = docx.Document(io.BytesIO(render(with_images("http://127.0.0.1:9/p.png"), ExportFormat.DOCX)))

    links: dict[str, str] = {}
    for h in (h for p in document.paragraphs for h in p.hyperlinks if h.address):
        links[h.address] = links.get(h.address, "") + h.text
    assert links["http://127.0.0.1:9/p.png"] == "Image: price chart"
    assert links["https://cdn.example/pixel.png"] == "Image"
    assert len(document.inline_shapes) == 0
    assert any("Image not shown: local" in p.text for p in document.paragraphs)


def test_the_markdown_makes_every_image_a_link_outside_code_and_keeps_the_rest_as_written():
    text = render(with_images("http://127.0.0.1:9/p.png"), ExportFormat.MD).decode()

    assert loadable(text) == []
    assert "A chart: [price chart](http://127.0.0.1:9/p.png) and [image](https://cdn.example/pixel.png)." in text
    assert "[local](chart.png) and [secret](file:///etc/passwd). Amazing![1]" in text
    assert "`![code](http://127.0.0.1:1/x.png)` stays code." in text


@pytest.mark.parametrize(
    "markdown",
    [
        "> ![split\n> over lines](http://127.0.0.1:9/p.png)\n",
        "[![nested](http://127.0.0.1:9/p.png)](https://example.org)\n",
        "![ref][pic]\n\n[pic]: http://127.0.0.1:9/p.png\n",
        "`![x](y)` then ![x](y)\n",
        "- ![a `b` c](http://127.0.0.1:9/p.png)\n",
        "Raw: <img src=http://127.0.0.1:9/p.png> and <IMG SRC='x'>\n",
        "<div>\n<img src=http://127.0.0.1:9/p.png>\n</div>\n",
        "> <picture><source srcset=http://127.0.0.1:9/p.png>\n> </picture>\n",
        "<!-- c --><img src=x>\n",
    ],
)
def test_no_image_or_raw_html_survives_the_markdown_export_however_it_is_written(markdown):
    from deep_research_agent.export.images import inert_markdown

    assert loadable(markdown), "the case must hold something loadable to begin with"
    assert loadable(inert_markdown(markdown)) == []


def test_what_the_markdown_export_could_not_place_is_escaped_rather_than_left_loadable(monkeypatch):
    from deep_research_agent.export import images

    monkeypatch.setattr(images, "_disarmed", lambda markdown, loaders: markdown)  # places nothing

    text = images.inert_markdown("See ![x](http://127.0.0.1:9/p.png) and <img src=x>.\n")

    assert loadable(text) == [] and "http://127.0.0.1:9/p.png" in text
