"""Office files read into addressable parts (in corpora and by web_fetch), and when two sources are one work."""

from __future__ import annotations

import pytest

from deep_research_agent.corpora.formats import Unreadable, read_document
from deep_research_agent.corpora.passages import build_passages
from deep_research_agent.documents.office import office_kind
from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.domain.works import citation_metadata, work_keys
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.report.citations import one_entry_per_work
from deep_research_agent.tools.fetch import Download, extract_document
from testkit import office


@pytest.fixture
def files(tmp_path):
    office.write_office_files(tmp_path)
    return tmp_path


def passages(folder, name):
    extracted = read_document(str(folder / name), name)
    return extracted, build_passages("c", name, extracted.sections)


def test_each_office_format_becomes_passages_anchored_where_a_reader_finds_them(files):
    _, sheet = passages(files, "harvest.xlsx")
    assert [(p.anchor, office.XLSX_QUOTE in p.text) for p in sheet] == [
        ("sheet=Harvest!A1", True),
        ("sheet=Notes!A1", False),
    ]
    report, parts = passages(files, "kelp-review.docx")
    assert report.title == office.DOCX_TITLE and report.format == "docx"
    carbon = next(p for p in parts if office.DOCX_QUOTE in p.text)
    assert carbon.anchor == "carbon-storage" and carbon.title_path == (office.DOCX_TITLE, "Carbon storage")
    assert any("Divers | 6" in p.text for p in parts), "table rows keep their cells together"
    _, slides = passages(files, "wind.pptx")
    assert [p.anchor for p in slides] == ["slide=1", "slide=2"] and office.PPTX_QUOTE in slides[1].text
    book, chapters = passages(files, "coast.epub")
    assert book.title == "Coast Chronicles" and chapters[0].anchor == "OEBPS/ch1.xhtml#storms"


def test_a_damaged_office_file_is_reported_not_indexed(tmp_path):
    (tmp_path / "broken.xlsx").write_bytes(b"not a zip at all")
    with pytest.raises(Unreadable, match="not a XLSX file"):
        read_document(str(tmp_path / "broken.xlsx"), "broken.xlsx")


def test_web_fetch_reads_an_office_file_by_content_type_or_extension_with_citable_locators():
    sheet = extract_document(
        Download(
            "https://x.test/h",
            "https://x.test/h",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            None,
            office.xlsx_bytes(),
        )
    )
    assert "[sheet=Harvest!A1]" in sheet.text and office.XLSX_QUOTE in sheet.text and "#sheet=Name!A1" in sheet.text
    deck = extract_document(
        Download(
            "https://x.test/w.pptx", "https://x.test/w.pptx", "application/octet-stream", None, office.pptx_bytes()
        )
    )
    assert "[slide=2] Slide 2: Maintenance" in deck.text
    assert office_kind("https://x.test/report.DOCX?download=1") == "docx"
    with pytest.raises(ToolFailure, match="not a DOCX file"):
        extract_document(Download("https://x.test/a.docx", "https://x.test/a.docx", "", None, b"PK\x03\x04broken"))


def test_arxiv_its_doi_and_a_publisher_page_with_the_same_identifiers_are_one_work():
    assert work_keys("https://arxiv.org/pdf/2401.01234v3.pdf") & work_keys("https://doi.org/10.48550/arXiv.2401.01234")
    assert not work_keys("https://arxiv.org/abs/2401.01234") & work_keys("https://arxiv.org/abs/2401.01235")
    meta = citation_metadata(
        '<meta name="citation_title" content="Kelp forests as carbon sinks in northern fjords">'
        '<meta name="citation_author" content="Lund, Ada"><meta content="10.1000/K1" name="citation_doi">'
    )
    assert meta.doi == "10.1000/K1" and meta.authors == ("Lund, Ada",)
    by_title = work_keys("https://pub.test/a", title=meta.title, authors=("Ada Lund",))
    assert by_title & work_keys(
        "https://other.test/b", title="Kelp Forests as Carbon Sinks in Northern Fjords!", authors=meta.authors
    )
    assert not work_keys("https://x.test", title="Introduction", authors=("Lund",)), "a short title names many works"


def test_the_evidence_store_keeps_one_source_per_work_and_the_report_one_entry():
    store = EvidenceStore()
    first = store.add_source("https://arxiv.org/abs/2401.01234", "Kelp")
    assert first is not None and store.add_source("https://doi.org/10.48550/arXiv.2401.01234") is None
    [source] = store.sources()
    assert source.urls == ("https://arxiv.org/abs/2401.01234", "https://doi.org/10.48550/arXiv.2401.01234")
    restored = EvidenceStore()
    restored.restore(store.snapshot(), [])
    assert restored.add_source("https://arxiv.org/pdf/2401.01234v2") is None, "a resumed run still knows the work"

    def source_of(url: str) -> str | None:
        record = store.source(url)
        return record.url if record else None

    draft = "A [1]. B [2][3].\n\n## Sources\n[1] arXiv — https://arxiv.org/abs/2401.01234\n[2] DOI — https://doi.org/10.48550/arXiv.2401.01234\n[3] Other — https://y.test/\n"
    merged = one_entry_per_work(draft, source_of)
    assert (
        merged
        == "A [1]. B [1][3].\n\n## Sources\n[1] arXiv — https://arxiv.org/abs/2401.01234\n[3] Other — https://y.test/\n"
    )
