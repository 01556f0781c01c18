"""Specification of page extraction: what ``web_fetch`` keeps from HTML, PDFs and other downloads.

These tests call the extractor directly on the stand-in pages; ``test_web_fetch.py`` covers the same
content end to end over HTTP.
"""

from __future__ import annotations

import pytest
import trafilatura

from deep_research_agent.documents import extract_html, extract_pdf
from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.tools.fetch import Download, extract_document
from testkit.web import (
    ARTICLES,
    JUNK_PHRASES,
    PDF_BYTES,
    PDF_FACTS,
    PDF_PAGES,
    PDF_TITLE,
    PNG_BYTES,
    SHORT_FACT,
    SHORT_HTML,
    SHORT_TITLE,
    ZIP_BYTES,
    article_html,
    make_pdf,
)


def download(body: bytes, content_type: str, charset: str | None = None) -> Download:
    url = "https://example.org/x"
    return Download(url=url, final_url=url, content_type=content_type, charset=charset, body=body)


@pytest.mark.parametrize("slug", ["halvorsen-cell", "norre-bay-kelp"])
def test_article_text_keeps_every_fact_and_number(slug: str) -> None:
    article = ARTICLES[slug]
    text = extract_html(article_html(article)).as_text()
    for fact in article.facts:
        assert fact in text
    for paragraph in article.paragraphs:
        assert paragraph in text


@pytest.mark.parametrize("slug", ["halvorsen-cell", "norre-bay-kelp"])
def test_article_metadata_becomes_title_author_and_date_lines(slug: str) -> None:
    article = ARTICLES[slug]
    document = extract_html(article_html(article))
    assert (document.title, document.author, document.date) == (article.title, article.author, article.date)
    assert document.as_text().startswith(f"Title: {article.title}\nAuthor: {article.author}\nDate: {article.date}\n\n")


@pytest.mark.parametrize("part", sorted(JUNK_PHRASES))
def test_article_text_drops_page_furniture(part: str) -> None:
    text = extract_html(article_html(ARTICLES["halvorsen-cell"])).as_text()
    assert JUNK_PHRASES[part] not in text


def test_markdown_carries_no_yaml_front_matter() -> None:
    text = extract_html(article_html(ARTICLES["norre-bay-kelp"])).text
    assert not text.startswith("---")
    assert "fingerprint:" not in text


def test_very_long_article_is_extracted_to_its_last_paragraph() -> None:
    text = extract_html(article_html(ARTICLES["long"])).as_text()
    assert len(text) > 80_000
    assert "final measurement: a fleet-wide capacity factor of 47.3 percent" in text


def test_tiny_page_keeps_its_sentence_and_title_but_not_its_menu_or_script() -> None:
    document = extract_html(SHORT_HTML)
    assert document.title == SHORT_TITLE
    assert SHORT_FACT in document.text
    assert "About us" not in document.text
    assert "SCRIPT-NOISE" not in document.text


GAUGE = "The river gauge at Kvam read 2.41 metres."


@pytest.mark.parametrize(
    ("fragment", "noise"),
    [
        (f'<p>{GAUGE}<script>var noise = "SCRIPT-NOISE";</script></p>', "SCRIPT-NOISE"),
        (f"<p>{GAUGE}<style>p {{ color: red }}</style></p>", "color: red"),
    ],
)
def test_fragment_that_trafilatura_rejects_falls_back_to_plain_text_without_code(fragment: str, noise: str) -> None:
    assert trafilatura.extract(fragment) is None  # the reason the fallback exists
    text = extract_html(fragment).text
    assert GAUGE in text
    assert noise not in text


def test_declared_charset_is_honoured() -> None:
    body = (
        "<html><head><title>Café</title></head><body><article>"
        "<p>Smørrebrød costs 95 kroner at the café in Århus, says the menu.</p></article></body></html>"
    )
    document = extract_document(download(body.encode("latin-1"), "text/html", "iso-8859-1"))
    assert "Smørrebrød costs 95 kroner" in document.text


def test_pdf_text_is_extracted_page_by_page_with_its_title() -> None:
    document = extract_pdf(PDF_BYTES)
    assert document.title == PDF_TITLE
    assert "[page 1]" in document.text and "[page 2]" in document.text
    for fact in PDF_FACTS:
        assert fact in document.text
    assert document.text.index(PDF_PAGES[0][1]) < document.text.index(PDF_PAGES[1][1])


def test_hand_written_pdf_helper_round_trips_text_with_parentheses() -> None:
    document = extract_pdf(make_pdf([["Capacity (net): 5 MW \\ phase 2"]], "T (draft)"))
    assert "Capacity (net): 5 MW \\ phase 2" in document.text
    assert document.title == "T (draft)"


def test_pdf_is_recognised_by_its_magic_bytes_whatever_the_content_type() -> None:
    document = extract_document(download(PDF_BYTES, "application/octet-stream"))
    assert PDF_FACTS[0] in document.text


def test_broken_pdf_is_a_permanent_failure() -> None:
    with pytest.raises(ToolFailure) as caught:
        extract_document(download(b"%PDF-1.4\nthis is not really a pdf", "application/pdf"))
    assert caught.value.kind == "permanent"
    assert "PDF could not be read" in caught.value.message


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(ZIP_BYTES, "application/zip"), (PNG_BYTES, "image/png"), (b"\x00\x01\x02", "application/octet-stream")],
)
def test_binary_content_is_refused_as_unsupported(body: bytes, content_type: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        extract_document(download(body, content_type))
    assert caught.value.kind == "permanent"
    assert f"unsupported content type {content_type}" in caught.value.message


def test_plain_text_is_kept_as_it_is() -> None:
    document = extract_document(download(b"line one\nline two: 42\n", "text/plain", "utf-8"))
    assert document.text == "line one\nline two: 42\n"


def test_html_without_a_content_type_is_recognised_by_its_markup() -> None:
    document = extract_document(download(article_html(ARTICLES["halvorsen-cell"]).encode(), ""))
    assert "412 Wh/kg" in document.text


def test_page_with_nothing_but_a_menu_has_no_text() -> None:
    assert extract_html("<html><body><nav><p>Main menu</p><p>Careers</p></nav></body></html>").text == ""
