"""Specification of how documents become passages: per-format structure, anchors, pages, sizes and ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from deep_research_agent.corpora.formats import Unreadable, format_of, read_document
from deep_research_agent.corpora.html import parse_html_docs
from deep_research_agent.corpora.markup import parse_markdown, parse_rst
from deep_research_agent.corpora.passages import MAX_CHARS, Block, Section, build_passages
from testkit import corpus as fixture
from testkit.web import make_pdf


def passages_of(path: Path, relative: str, html: str = "docs"):
    return build_passages("handbook", relative, read_document(str(path), relative, html).sections)  # type: ignore[arg-type]


def write(tmp_path: Path, relative: str, text: str | bytes) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# --- HTML -----------------------------------------------------------------------------------------


def test_a_docbook_definition_list_gives_one_passage_per_setting_anchored_at_its_id():
    document = parse_html_docs(fixture.CONFIG_HTML.encode())
    passages = build_passages("handbook", "guide/config.html", document.sections)

    flux, workers = passages
    assert flux.anchor == "GUC-FLUX-BUFFER" and workers.anchor == "GUC-TIDE-WORKERS"
    assert flux.title_path == ("20.4. Resource Consumption", "20.4.1. Memory", "flux_buffer (integer)")
    assert flux.text.startswith("flux_buffer (integer)\n\n"), "the setting's own term is part of its text"
    assert fixture.FLUX_QUOTE.replace("4MB", "`4MB`") in flux.text


def test_a_heading_takes_the_id_of_the_section_it_opens_and_page_chrome_is_left_out():
    passages = build_passages("handbook", "guide/limits.html", parse_html_docs(fixture.LIMITS_HTML.encode()).sections)

    assert [p.anchor for p in passages] == ["LIMITS"]
    text = passages[0].text
    assert fixture.LIMIT_QUOTE in text, "table rows keep their cells on one line"
    assert "Prev" not in text and "navigation footer" not in text


def test_a_sphinx_page_is_titled_by_its_h1_and_keeps_signatures_but_not_sidebar_footer_or_pilcrows():
    document = parse_html_docs(fixture.MODULE_HTML.encode())
    text = "\n".join(block.text for section in document.sections for block in section.blocks)

    assert document.title == "tidal — Tidal gauge access", "the <title>'s site suffix is dropped"
    signature = next(s for s in document.sections if s.anchor == "tidal.connect")
    assert signature.heading == "tidal.connect(gauge, timeout=5.0)"
    assert signature.path == ("tidal — Tidal gauge access", "Module functions", "tidal.connect(gauge, timeout=5.0)")
    assert fixture.CONNECT_QUOTE in text
    assert "¶" not in text and "Sidebar text" not in text and "Copyright footer" not in text and "modules" not in text


def test_numbered_h1_sections_keep_the_page_title_as_the_document_title():
    page = b"""<html><head><title>VACUUM</title></head><body><div class=nosearch><a href="/">Home</a> Menu</div>
    <h1 id="syntax">1. Syntax</h1><p>vacuum-stmt: VACUUM [schema-name] INTO filename</p>
    <h1 id="description">2. Description</h1><p>The VACUUM command rebuilds the database file.</p></body></html>"""

    document = parse_html_docs(page)

    assert document.title == "VACUUM"
    assert [(s.path, s.anchor) for s in document.sections] == [
        (("VACUUM", "1. Syntax"), "syntax"),
        (("VACUUM", "2. Description"), "description"),
    ]
    assert "Menu" not in str(document.sections)


def test_a_long_section_is_cut_at_its_named_anchors_and_each_part_is_titled_by_its_bold_label():
    items = "".join(
        f'<a name="item_{n}"></a><li><p><b>Limit number {n}</b></p><p>{"The limit applies to the engine. " * 24}</p></li>'
        for n in range(1, 4)
    )
    page = f"<html><head><title>Limits</title></head><body><h2>Limits In Tidal</h2><ol>{items}</ol></body></html>"

    passages = build_passages("handbook", "limits.html", parse_html_docs(page.encode()).sections)

    assert [p.anchor for p in passages] == ["item_1", "item_2", "item_3"]
    assert passages[1].title_path == ("Limits", "Limits In Tidal", "Limit number 2")
    assert passages[1].text.startswith("Limit number 2\n\n")
    assert all(len(p.text) <= MAX_CHARS for p in passages)


def test_a_page_without_a_declared_charset_is_read_as_utf8_and_one_with_an_xml_declaration_is_accepted(tmp_path):
    plain = write(
        tmp_path, "a.html", "<html><head><title>Gauge — notes</title></head><body><p>Ümlaut ✓</p></body></html>"
    )
    declared = write(
        tmp_path,
        "b.html",
        '<?xml version="1.0" encoding="UTF-8"?><html><head><title>B</title></head><body><p>Café</p></body></html>',
    )

    assert passages_of(plain, "a.html")[0].text == "Gauge — notes\n\nÜmlaut ✓"
    assert "Café" in passages_of(declared, "b.html")[0].text


def test_blocks_that_are_only_links_are_navigation_and_leave_the_text():
    page = b"""<html><head><title>Index</title></head><body><h1>Index</h1>
    <ul><li><a href="a.html">sqlite3_open</a></li><li><a href="b.html">sqlite3_close</a></li></ul>
    <p>See <a href="a.html">sqlite3_open</a> for the flags a connection is opened with.</p></body></html>"""

    text = "\n".join(block.text for section in parse_html_docs(page).sections for block in section.blocks)

    assert "- sqlite3_open" not in text and "sqlite3_close" not in text
    assert "See sqlite3_open for the flags a connection is opened with." in text


def test_the_web_reading_takes_the_main_content_as_web_fetch_does(tmp_path):
    page = write(
        tmp_path,
        "saved/post.html",
        "<html><head><title>Kelp farming notes</title></head><body><nav><a href='/'>Home</a><a href='/x'>Shop</a></nav>"
        "<article><h1>Kelp farming notes</h1><p>" + "Kelp grows two metres a month in summer. " * 12 + "</p>"
        "<h2>Harvest</h2><p>" + "Harvest happens in May before fouling starts. " * 10 + "</p></article>"
        "<footer>Subscribe to our newsletter</footer></body></html>",
    )

    passages = passages_of(page, "saved/post.html", html="web")

    text = "\n".join(p.text for p in passages)
    assert "Kelp grows two metres a month in summer." in text and "Harvest happens in May" in text
    assert "newsletter" not in text and "Shop" not in text
    assert all(p.anchor is None for p in passages), "trafilatura keeps no ids, so there is nothing to point at"


# --- Markdown, reST, text, PDF --------------------------------------------------------------------


def test_markdown_sections_follow_the_headings_with_github_anchors_and_the_front_matter_title():
    document = parse_markdown(fixture.MARKDOWN, fallback_title="field-guide.md")

    assert document.title == "Field Guide"
    assert [(s.path, s.anchor) for s in document.sections] == [
        (("Field Guide",), "field-guide"),
        (("Field Guide", "Calibration"), "calibration"),
        (("Field Guide", "Calibration"), "calibration-1"),
    ]
    assert "```\nsensor.calibrate(days=14)\n```" in document.sections[1].blocks[1].text, "code blocks stay whole"


def test_rst_titles_nest_by_adornment_order_and_take_explicit_targets_as_anchors():
    document = parse_rst(fixture.RST, fallback_title="history.rst")

    assert document.title == "History"
    assert [(s.path, s.anchor) for s in document.sections] == [
        (("History", "Early years"), "early-years"),
        (("History", "Later years"), "later-years"),
    ]


def test_rst_object_directives_become_definitions_anchored_like_sphinx_html():
    text = (
        "tidal module\n============\n\n.. module:: tidal\n\nReads gauges.\n\n"
        ".. function:: connect(gauge, timeout=5.0)\n   :noindex:\n\n   Open a connection to a gauge.\n\n"
        "Back in the module section.\n"
    )

    document = parse_rst(text, fallback_title="tidal.rst")

    connect = next(s for s in document.sections if s.anchor == "tidal.connect")
    assert connect.heading == "connect(gauge, timeout=5.0)" and connect.path[-1] == "connect()"
    assert [b.text for b in connect.blocks] == ["Open a connection to a gauge."]
    assert document.sections[-1].path == ("tidal module",), "text after the directive's body is the section's again"


def test_plain_text_is_cut_at_blank_lines_and_anchored_at_line_numbers(tmp_path):
    long_text = "\n\n".join(f"Paragraph {n}. " + "Gauge readings were stable. " * 30 for n in range(1, 5))
    path = write(tmp_path, "notes/log.txt", long_text)

    passages = passages_of(path, "notes/log.txt")

    assert len(passages) > 1 and all(len(p.text) <= MAX_CHARS for p in passages)
    assert passages[0].anchor == "L1" and all(p.anchor and p.anchor.startswith("L") for p in passages)
    assert passages[1].text.startswith("Paragraph")


def test_pdf_pages_are_passages_numbered_by_page(tmp_path):
    pdf = make_pdf([("Report", fixture.PDF_QUOTE), ("Outlook", "Operators expect 11.9 GWh.")], "Grid Report")
    path = write(tmp_path, "reports/grid.pdf", pdf)

    passages = passages_of(path, "reports/grid.pdf")

    assert [(p.page, p.anchor) for p in passages] == [(1, None), (2, None)]
    assert passages[0].title_path == ("Grid Report", "p. 1") and fixture.PDF_QUOTE in passages[0].text


@pytest.mark.parametrize(
    "content, reason",
    [(b"%PDF-1.4\nnot really\n", "could not be read"), (make_pdf([()], "Empty"), "no extractable text")],
)
def test_an_unreadable_pdf_says_why(tmp_path, content, reason):
    path = write(tmp_path, "bad.pdf", content)

    with pytest.raises(Unreadable, match=reason):
        read_document(str(path), "bad.pdf")


def test_only_the_supported_formats_are_read():
    assert [format_of(n) for n in ("a.html", "b.HTM", "c.md", "d.rst", "e.rst.txt", "f.txt", "g.pdf")] == [
        "html", "html", "markdown", "rst", "rst", "text", "pdf",
    ]  # fmt: skip
    assert format_of("logo.png") is None and format_of("notes") is None


# --- sizes and ids ----------------------------------------------------------------------------------


def section(path: tuple[str, ...], anchor: str | None, *texts: str) -> Section:
    return Section(path=path, anchor=anchor, blocks=[Block(t) for t in texts])


def test_an_intro_line_joins_its_first_subsection_but_short_siblings_keep_their_own_anchors():
    sections = [
        section(("Guide",), "guide", "Intro line."),
        section(("Guide", "Install"), "install", "Run the installer."),
        section(("Guide", "Remove"), "remove", "Delete the folder."),
    ]

    passages = build_passages("handbook", "guide.md", sections)

    assert [(p.anchor, p.headings) for p in passages] == [("guide", ("Guide", "Install")), ("remove", ("Remove",))]
    assert passages[0].text == "Guide\n\nIntro line.\n\nInstall\n\nRun the installer."


def test_ids_are_stable_and_editing_one_section_leaves_the_others_ids_alone():
    def sections(first: str) -> list[Section]:
        return [
            section(("Guide", "A"), "a", first * 10),
            section(("Guide", "B"), "b", "Second section text. " * 20),
            section(("Guide", "B"), "b", "More under the same anchor. " * 20),
        ]

    before = build_passages("handbook", "guide.md", sections("First section. "))
    again = build_passages("handbook", "guide.md", sections("First section. "))
    edited = build_passages("handbook", "guide.md", sections("First section, edited. "))

    assert [p.id for p in before] == [p.id for p in again]
    assert len({p.id for p in before}) == 3 and all(p.id.startswith("handbook:") for p in before)
    assert before[0].id == edited[0].id, "the id follows the anchor, not the text"
    assert [p.id for p in before[1:]] == [p.id for p in edited[1:]]
    assert build_passages("handbook", "other.md", sections("First section. "))[0].id != before[0].id
